import type { SessionPlace } from '../acp/session-key.js'
import { KithError } from '../errors.js'
import { checkFresh } from '../events/agent-binding.js'
import { makeNotice, type ReplyOutcome } from '../events/chat.js'
import { signEvent, type NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import {
  makeSessionControl,
  parseSessionControl,
  type SessionAction,
  type SessionControl,
} from '../events/session-control.js'
import type { Action } from '../grants/authority.js'
import { describePolicy } from '../grants/policy.js'
import { postAsAgent } from './agent-signer.js'
import type { HostedAgent, NodeContext } from './node-context.js'
import type { SessionReports } from './sessions.js'
import { removeWorktree, uncommitted } from './worktrees.js'
import { sessionDiff } from './session-diff.js'
import { findSession, listSessions } from './sessions.js'

/** What session requests need of the bridge. */
export interface SessionControlDeps {
  node: NodeContext
  reports: SessionReports
  agent(pubkey: string): HostedAgent | undefined
  mayAct(agent: HostedAgent, key: string, action: Action): boolean
}

/**
 * A notice by the agent in the session's thread (under its root; the channel for the main
 * thread), naming the request it answers (`e` … `mention`). Done: no `outcome` tag (the text
 * says `✓`); refused or failed: its `outcome` tag, which readers go by (the text says `⚠`).
 */
export function sessionNotice(
  deps: SessionControlDeps,
  agent: HostedAgent,
  place: SessionPlace,
  text: string,
  request?: string,
  outcome?: ReplyOutcome,
): NostrEvent | undefined {
  const { node } = deps
  if (node.stopped()) return undefined
  const notice = makeNotice(
    {
      channel: place.channel,
      fleet: node.book.fleet,
      text,
      ...(place.thread === undefined ? {} : { thread: place.thread }),
      ...(request === undefined ? {} : { mention: request }),
      notice: true,
      ...(outcome === undefined ? {} : { outcome }),
    },
    node.now(),
  )
  return postAsAgent(node, agent, notice, 'a session notice')
}

/** What a session request came to: the notice's text, and its outcome unless it was done. */
interface Said {
  text: string
  outcome?: ReplyOutcome
}
const done = (text: string): Said => ({ text })
const refused = (code: string, text: string): Said => ({ text, outcome: ['refused', code] })
const failed = (code: string, text: string): Said => ({ text, outcome: ['failed', code] })

/** Carries out a parsed request for a session of `agent` (hosted here); says what came of it. */
async function carryOut(
  deps: SessionControlDeps,
  agent: HostedAgent,
  c: SessionControl,
): Promise<Said> {
  const { node } = deps
  const pubkey = agent.record.pubkey
  const name = agent.record.name
  const place: SessionPlace = {
    channel: c.channel,
    ...(c.thread === undefined ? {} : { thread: c.thread }),
  }
  const fresh = checkFresh({ created_at: c.createdAt }, node.now())
  if (c.fleet !== node.book.fleet)
    return refused('fleet', `⚠ ${name} did not act on a session request: it names another fleet`)
  if (!fresh.ok)
    return refused('stale', `⚠ ${name} did not act on a session request: ${fresh.reason}`)
  if (!deps.mayAct(agent, c.author, c.request.action === 'close' ? 'session.close' : 'session.set'))
    return refused(
      'policy',
      `⚠ you may not change ${name}'s sessions: its approvers are ${describePolicy(agent.record.approvers)}`,
    )
  const record = node.store.sessions.record(pubkey, place)
  // A diff reads what a session left: a closed one's branch too.
  if (c.request.action === 'diff' && record !== undefined) {
    try {
      return done(sessionDiff(node.id.home, name, record))
    } catch (err) {
      if (!(err instanceof KithError)) throw err
      return failed('not-found', `⚠ ${name} has no diff to show: ${err.message}`)
    }
  }
  if (record === undefined || record.closedAt !== undefined)
    return failed(
      'not-found',
      `⚠ ${name} has no open session there${record?.closedAt !== undefined ? ' (it was closed)' : ''}`,
    )
  const r = c.request
  try {
    if (r.action === 'close') {
      const wt = record.worktree
      // Never with uncommitted work in its worktree (ignored files too) unless the person saw
      // the list and closed it with force: nothing is closed, and it says what is there.
      const dirty =
        wt === undefined || r.keep === true || r.force === true ? undefined : uncommitted(wt.path)
      if (dirty !== undefined)
        return refused(
          'uncommitted',
          `⚠ ${name} did not close the session: its worktree ${wt!.path} has ${dirty}; commit or stash them, close it with --keep, or with --force to delete them with the worktree`,
        )
      const closed = await agent.host.close(place)
      node.store.sessions.close(pubkey, place, node.now())
      deps.reports.closed(pubkey, place)
      let after = ''
      if (wt !== undefined && r.keep === true)
        after = `; its worktree is kept at ${wt.path} (branch ${wt.branch})`
      else if (wt !== undefined) {
        removeWorktree(wt.path, r.force === true)
        after = `; its worktree ${wt.path} is removed${r.force === true ? ' with what it held' : ''} (branch ${wt.branch} is kept)`
      }
      const how = {
        closed: ' (ACP session/close)',
        'not-open': ' (it was not open in the agent: it is forgotten here)',
        'no-close': ' (the agent has no session/close: it is forgotten here)',
      }[closed]
      return done(`✓ ${name} closed this session${how}${after}`)
    }
    if (r.action === 'set') {
      const set = await agent.host.configure(place, {
        ...(r.mode === undefined ? {} : { mode: r.mode }),
        ...(r.model === undefined ? {} : { model: r.model }),
        ...(r.options === undefined ? {} : { options: r.options }),
      })
      deps.reports.settings(pubkey, place, {
        ...(r.mode === undefined ? {} : { mode: r.mode }),
        ...(r.model === undefined ? {} : { model: set.model?.value ?? r.model }),
        ...(r.options === undefined ? {} : { options: r.options }),
      })
      const what = [
        ...(r.mode === undefined ? [] : [`mode ${r.mode}`]),
        ...(r.model === undefined ? [] : [`model ${r.model}`]),
        ...Object.entries(r.options ?? {}).map(([id, v]) => `${id} ${v}`),
      ]
      return done(`✓ ${name}: this session's ${what.join(' and ')} set`)
    }
    if (r.action === 'diff') return failed('not-found', `⚠ ${name} has no session there`)
    return refused(
      'command',
      `⚠ ${name}: run /${r.name} as a message in the thread (@${name} /${r.name})`,
    )
  } catch (err) {
    if (!(err instanceof KithError)) throw err
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : ''
    return failed(
      'error',
      `⚠ ${name} did not ${r.action === 'close' ? 'close the session' : 'change the session'}: ${err.message}${cause}`,
    )
  }
}

/**
 * Kind 4150 from any device: for an agent hosted here, carried out if its author may approve
 * for the agent, and answered with a notice in the session's thread either way.
 */
export async function applySessionControl(
  deps: SessionControlDeps,
  event: NostrEvent,
): Promise<void> {
  let c: SessionControl
  try {
    c = parseSessionControl(event)
  } catch (err) {
    if (!(err instanceof KithError)) throw err
    // Unreadable requests do nothing (they are stored; there is nobody to tell).
    deps.node.log(`ignored a session request (${event.id.slice(0, 8)}): ${err.message}`)
    return
  }
  const agent = deps.agent(c.agent)
  if (agent === undefined) return
  const said = await carryOut(deps, agent, c)
  deps.node.log(`agent ${agent.record.name}: session request ${event.id.slice(0, 8)}: ${said.text}`)
  sessionNotice(
    deps,
    agent,
    { channel: c.channel, ...(c.thread === undefined ? {} : { thread: c.thread }) },
    said.text,
    event.id,
    said.outcome,
  )
}

/** When this node last dated a session request (see requestSession). */
const lastRequestAt = new WeakMap<NodeContext, number>()

/**
 * A request from this device (`kith session close|set`): the session named by its short id,
 * signed as a 4150, sent, and carried out here at once when its agent is hosted here.
 */
export function requestSession(
  deps: SessionControlDeps,
  params: Record<string, unknown>,
): { event: NostrEvent } {
  const { node } = deps
  if (typeof params.session !== 'string') throw new KithError('usage', 'which session?')
  const request = params.request as SessionAction
  const s = findSession(listSessions(node.store.reads), params.session)
  // Two identical requests in one second would be one event (NIP-01 ids hash seconds), and the
  // second would be answered with the first's answer: each goes a second after the last.
  const at = Math.max(node.now(), (lastRequestAt.get(node) ?? 0) + 1)
  lastRequestAt.set(node, at)
  const template = makeSessionControl(
    {
      agent: s.agent,
      channel: s.channel,
      ...(s.thread === undefined ? {} : { thread: s.thread }),
      fleet: node.book.fleet,
      request,
    },
    at,
  )
  // Through the node's signer: in a fleet that seals, the request is sealed like chat.
  const secret = node.id.deviceSecret
  const event = node.sign === undefined ? signEvent(template, secret) : node.sign(template, secret)
  node.enqueue(event)
  node.pump()
  void applySessionControl(deps, event).catch((err: unknown) =>
    node.log(`session request ${event.id.slice(0, 8)} failed: ${String(err)}`),
  )
  return { event }
}

/** The notice answering a request, once it has arrived here. */
export function sessionAnswer(node: NodeContext, request: string): NostrEvent | undefined {
  return node.store.reads.newest({ kinds: [Kind.ChatMessage], tags: { e: [request] } })
}
