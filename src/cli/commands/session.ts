import { KithError } from '../../errors.js'
import type { SessionAction } from '../../events/session-control.js'
import type { SessionState } from '../../events/session-state.js'
import { outcomeOf, parseChannel } from '../../events/chat.js'
import { findSession, listSessions } from '../../node/sessions.js'
import { connectNode, requireNode, type ControlClient } from '../control-client.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { withLocalNode } from '../local-node.js'

export const sessionCommand = declare({
  name: 'session',
  summary: "list, show, close and configure agents' sessions across the fleet",
  usage: [
    'kith session list [--all] [--json]',
    "kith session new AGENT --project NAME [--worktree] [--mode MODE] [--model MODEL]\n                 [--channel NAME] 'first prompt'",
    'kith session show ID [--json]',
    'kith session close ID [--keep | --force]',
    'kith session set ID [--mode MODE] [--model MODEL] [--option ID=VALUE]…',
    'kith session diff ID [--json]',
  ],
  subcommands: {
    list: 'the sessions of every agent of the fleet, most recently active first',
    new: "start a session in one of the hosting machine's projects (or a worktree of it)",
    show: 'one session: where it runs, its modes, models, commands and usage',
    close: 'end a session (ACP session/close where the agent has it)',
    set: "change a session's mode or model",
    diff: "a worktree session's branch diff against where it left its project (open or closed)",
  },
  options: {
    all: { type: 'boolean', description: '(list) closed sessions too' },
    json: { type: 'boolean', description: 'machine-readable output' },
    keep: { type: 'boolean', description: '(close) leave its git worktree in place' },
    force: {
      type: 'boolean',
      description: "(close) remove its worktree with the files it lists that aren't committed",
    },
    project: { type: 'string', value: 'NAME', description: "(new) one of the host's projects" },
    worktree: { type: 'boolean', description: '(new) in a new git worktree, on a new branch' },
    channel: { type: 'string', value: 'NAME', description: '(new) the channel (default ops)' },
    mode: { type: 'string', value: 'MODE', description: '(set) the mode, e.g. plan' },
    model: { type: 'string', value: 'MODEL', description: '(set) the model' },
    option: {
      type: 'string',
      value: 'ID=VALUE',
      multiple: true,
      description: '(set) a session config option (kith session show lists them)',
    },
  },
  about: `Each thread an agent answers in is a session: a top-level message that mentions an agent
starts one, replies in the thread continue it. The node hosting an agent reports each of its
sessions to the fleet (kind 34150), so any device lists them: machine, agent, channel and thread,
where it runs, state (idle, working, awaiting-permission, closed), title, last activity, and the
tokens and cost the agent reports. ID is the short id kith session list shows (a prefix will
do), or the thread's root event id. close and set are signed requests (kind 4150) the hosting
node carries out for people its agent's approvers policy allows; its answer is a notice in the
thread, which this command prints. In a thread, /mode NAME and /model NAME do the same as set.
new starts a session from any device the agent's allow policy admits: in one of the hosting
machine's projects (kith project add there), with --worktree in a git worktree of its own on a
new branch (removed on close unless --keep; never while it holds changed, untracked or ignored
files, which the refusal lists, unless closed with --force). A directory that is
not one of its projects is refused, with the reason. It is a message that mentions the agent,
so the session is a thread like any other.
diff asks the hosting node for the session's branch diff against the commit it left its project
from (its worktree as it is now while open, new files included; its branch once closed), bounded
to 24 KB; the answer is a notice in the thread too. --json prints {session, summary, diff}.
list and show read this node's copy (no node needed); the rest need kith up.`,
})

type Named = SessionState & { agentName: string; hostName: string }

async function sessions(): Promise<Named[]> {
  const node = await connectNode()
  const list =
    node === undefined
      ? withLocalNode(({ store }) => listSessions(store.reads))
      : await node.request('sessions').finally(() => node.close())
  return withLocalNode(({ names }) =>
    list.map((s) => ({
      ...s,
      agentName: names.who(s.agent).name,
      hostName: names.who(s.host).name,
    })),
  )
}

function ago(at: number): string {
  const s = Math.max(0, Math.floor(Date.now() / 1000) - at)
  if (s < 60) return `${s}s ago`
  if (s < 3600) return `${Math.floor(s / 60)}m ago`
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`
  return `${Math.floor(s / 86400)}d ago`
}

function usageText(s: SessionState): string {
  const u = s.usage
  if (u === undefined) return ''
  const parts: string[] = []
  if (u.used !== undefined)
    parts.push(`${u.used}${u.size === undefined ? '' : `/${u.size}`} tokens`)
  if (u.cost !== undefined) parts.push(`${u.cost.amount.toFixed(2)} ${u.cost.currency}`)
  return parts.join(', ')
}

function where(s: SessionState): string {
  return `#${s.channel}${s.thread === undefined ? ' (main)' : `/${s.thread.slice(0, 8)}`}`
}

function place(s: SessionState): string {
  if (s.worktree !== undefined) return `${s.worktree.path} (worktree, ${s.worktree.branch})`
  return s.cwd ?? ''
}

/** Sends a request and waits for the hosting node's notice; exit 0 when it says done (✓). */
async function request(
  daemon: ControlClient,
  session: string,
  req: SessionAction,
  out: Out,
  json = false,
): Promise<number> {
  const { id } = await daemon.request('session-request', { session, request: req })
  // The hosting node answers with a notice in the thread; it may be another machine, so wait.
  const deadline = Date.now() + 30_000
  for (;;) {
    const answer = await daemon.request('session-answer', { request: id })
    if (answer !== null) {
      // Done unless the notice carries an outcome (refused or failed): the tag, not the text.
      const ok = outcomeOf(answer) === undefined
      if (json) {
        // The notice: a summary line, then (for a diff) the diff fenced.
        const fenced = /\n\n```diff\n([\s\S]*)\n```$/.exec(answer.content)
        out.json({
          session,
          ok,
          summary: answer.content.split('\n')[0],
          ...(req.action === 'diff' ? { diff: fenced === null ? '' : `${fenced[1]}\n` } : {}),
        })
      } else out.line(answer.content)
      return ok ? 0 : 1
    }
    if (Date.now() > deadline) {
      out.err(
        `⚠ request ${id.slice(0, 8)} sent; no answer from the hosting node within 30 s (is its kith up running?)`,
      )
      return 1
    }
    await new Promise((r) => setTimeout(r, 200))
  }
}

/** kith session new: the prompt, sent with where to start; waits for the host to take it. */
async function startSession(
  args: string[],
  values: { project?: string; worktree?: boolean; mode?: string; model?: string; channel?: string },
  out: Out,
): Promise<number> {
  const [agent, prompt, ...extra] = args
  if (agent === undefined || prompt === undefined || extra.length > 0)
    throw new KithError('usage', "kith session new AGENT --project NAME 'first prompt'")
  if (values.project === undefined)
    throw new KithError(
      'usage',
      'kith session new needs --project NAME (kith project list on the host)',
    )
  const channel = parseChannel(values.channel ?? 'ops')
  const daemon = await requireNode('kith session new needs the node running: start kith up')
  try {
    const sent = await daemon.request('send', {
      channel,
      text: `@${agent.replace(/^@/, '')} ${prompt}`,
      session: {
        project: values.project,
        ...(values.worktree === true ? { worktree: true } : {}),
        ...(values.mode === undefined ? {} : { mode: values.mode }),
        ...(values.model === undefined ? {} : { model: values.model }),
      },
    })
    const root = sent.event.id
    // Taken when its host reports the session (kind 34150); refused with a reply saying why.
    const deadline = Date.now() + 30_000
    for (;;) {
      const listed = (await daemon.request('sessions')).find((s) => s.thread === root)
      if (listed !== undefined) {
        out.line(
          `session ${listed.id} started in #${channel}/${root.slice(0, 8)}${listed.worktree === undefined ? (listed.cwd === undefined ? '' : ` in ${listed.cwd}`) : ` in worktree ${listed.worktree.path} (branch ${listed.worktree.branch})`}`,
        )
        out.line(
          `  follow it: kith watch '#${channel}', kith log '#${channel}' --thread ${root.slice(0, 8)}`,
        )
        return 0
      }
      const answer = await daemon.request('session-answer', { request: root })
      if (answer !== null && outcomeOf(answer) !== undefined) {
        out.err(answer.content)
        return 1
      }
      if (Date.now() > deadline) {
        out.err(
          `⚠ sent ${root.slice(0, 8)}; its host has not taken it within 30 s (is its kith up running?)`,
        )
        return 1
      }
      await new Promise((r) => setTimeout(r, 200))
    }
  } finally {
    daemon.close()
  }
}

export async function runSession(argv: string[], out: Out): Promise<number> {
  const parsed = sessionCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  const [sub, id, ...extra] = positionals
  if (sub === 'new') return startSession(positionals.slice(1), values, out)
  if (extra.length > 0) throw new KithError('usage', `unexpected argument ${extra[0]}`)
  if (sub === 'list') {
    const all = (await sessions()).filter((s) => values.all === true || s.status !== 'closed')
    if (values.json === true) {
      out.json({ sessions: all })
      return 0
    }
    if (all.length === 0) {
      out.line('no sessions (mention an agent in a channel to start one)')
      return 0
    }
    for (const s of all)
      out.line(
        [
          s.id,
          `${s.agentName}@${s.hostName}`,
          where(s),
          s.status,
          ago(s.activeAt ?? s.reportedAt),
          JSON.stringify(s.title ?? ''),
          place(s),
          usageText(s),
        ]
          .filter((x) => x !== '')
          .join('  '),
      )
    return 0
  }
  if (id === undefined) throw new KithError('usage', `kith session ${sub ?? ''} needs a session ID`)
  if (sub === 'show') {
    const s = findSession(await sessions(), id) as Named
    if (values.json === true) {
      out.json(s)
      return 0
    }
    out.line(`${s.id}  ${s.agentName} on ${s.hostName}  ${where(s)}  ${s.status}`)
    if (s.title !== undefined) out.line(`  title     ${s.title}`)
    if (place(s) !== '') out.line(`  cwd       ${place(s)}`)
    if (s.project !== undefined) out.line(`  project   ${s.project}`)
    if (s.thread !== undefined)
      out.line(`  thread    ${s.thread} (kith log --thread ${s.thread.slice(0, 8)})`)
    out.line(`  active    ${ago(s.activeAt ?? s.reportedAt)}`)
    if (s.acpSession !== undefined) out.line(`  acp       ${s.acpSession}`)
    if (s.modes !== undefined)
      out.line(`  mode      ${s.mode ?? '?'} (of ${s.modes.map((m) => m.id).join(', ')})`)
    else if (s.mode !== undefined) out.line(`  mode      ${s.mode}`)
    if (s.models !== undefined)
      out.line(`  model     ${s.model ?? '?'} (of ${s.models.join(', ')})`)
    else if (s.model !== undefined) out.line(`  model     ${s.model}`)
    for (const o of s.options ?? [])
      out.line(
        `  option    ${o.id} = ${o.value}${o.values.length === 0 ? '' : ` (of ${o.values.join(', ')})`}${o.name === o.id ? '' : `  ${o.name}`}`,
      )
    if (s.commands !== undefined && s.commands.length > 0) {
      out.line('  commands  (run as /name in the thread)')
      for (const c of s.commands) out.line(`    /${c.name}  ${c.description}`)
    }
    if (usageText(s) !== '') out.line(`  usage     ${usageText(s)}`)
    return 0
  }
  if (sub === 'close' || sub === 'set') {
    let req: SessionAction
    if (sub === 'close') {
      if (values.keep === true && values.force === true)
        throw new KithError(
          'usage',
          '--keep leaves the worktree and --force removes it: one of them',
        )
      req = {
        action: 'close',
        ...(values.keep === true ? { keep: true } : {}),
        ...(values.force === true ? { force: true } : {}),
      }
    } else {
      const options: Record<string, string> = {}
      for (const o of values.option ?? []) {
        const eq = o.indexOf('=')
        if (eq <= 0) throw new KithError('usage', `--option takes ID=VALUE, not ${o}`)
        options[o.slice(0, eq)] = o.slice(eq + 1)
      }
      if (values.mode === undefined && values.model === undefined && values.option === undefined)
        throw new KithError(
          'usage',
          'kith session set ID needs --mode MODE, --model MODEL or --option ID=VALUE',
        )
      req = {
        action: 'set',
        ...(values.mode === undefined ? {} : { mode: values.mode }),
        ...(values.model === undefined ? {} : { model: values.model }),
        ...(values.option === undefined ? {} : { options }),
      }
    }
    const daemon = await requireNode(`kith session ${sub} needs the node running: start kith up`)
    try {
      return await request(daemon, id, req, out)
    } finally {
      daemon.close()
    }
  }
  if (sub === 'diff') {
    const daemon = await requireNode('kith session diff needs the node running: start kith up')
    try {
      return await request(daemon, id, { action: 'diff' }, out, values.json === true)
    } finally {
      daemon.close()
    }
  }
  throw new KithError(
    'usage',
    `kith session ${sub ?? ''}: not a subcommand\n\n${sessionCommand.help()}`,
  )
}

/** What the command index loads. */
export { sessionCommand as command, runSession as run }
