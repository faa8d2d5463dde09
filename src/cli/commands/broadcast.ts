import { KithError } from '../../errors.js'
import { parseChannel } from '../../events/chat.js'
import type { NostrEvent } from '../../events/event.js'
import { requireNode, type ControlClient } from '../control-client.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { openLocalFleet } from '../local-node.js'
import { keyRows } from './fleet-common.js'

export const broadcastCommand = declare({
  name: 'broadcast',
  summary: 'send one prompt to several agents, each in its own thread, with a receipt per agent',
  usage: ["kith broadcast '#channel' 'text' (--agents a,b | --all) [--wait SECONDS] [--json]"],
  arity: {
    min: 2,
    max: 2,
    error: "kith broadcast takes a channel and the text: kith broadcast '#ops' 'text' --all",
  },
  options: {
    agents: { type: 'string', value: 'a,b', description: 'the agents, by name as in a mention' },
    all: { type: 'boolean', description: 'every agent of the fleet (active grants)' },
    wait: {
      type: 'string',
      value: 'SECONDS',
      description: 'how long to wait for the answers (default 120)',
    },
    json: { type: 'boolean', description: 'machine-readable output' },
  },
  about: `Sends the text to each agent as its own message (@name TEXT), so each answers in a thread of
its own, a session of its own. Then shows a receipt per agent as it changes: queued (sent; its
host has not begun), started (its host reports the session working), answered, refused (with
the reason: its policy, or not sent at all: a name that is no agent), failed (with the reason:
crashed, cannot start, timed out…) or cancelled. Waits until every agent has an outcome, or
--wait runs out (exit 1 then, and for any refused or failed). Needs kith up.`,
})

type Status = 'queued' | 'started' | 'answered' | 'refused' | 'failed' | 'cancelled'
interface Receipt {
  agent: string
  status: Status
  prompt?: string
  reason?: string
  answer?: string
}

const final = (s: Status) => s !== 'queued' && s !== 'started'

/** The agent's reply under `prompt`, as its outcome: answered, or refused/failed/cancelled. */
function outcomeOf(reply: NostrEvent): Pick<Receipt, 'status' | 'reason' | 'answer'> {
  const tag = reply.tags.find((t) => t[0] === 'outcome')
  const firstLine = reply.content.split('\n').find((l) => l.trim() !== '') ?? ''
  if (tag === undefined) return { status: 'answered', answer: firstLine }
  const status = (['refused', 'failed', 'cancelled'] as const).find((s) => s === tag[1]) ?? 'failed'
  return {
    status,
    reason:
      reply.content
        .split('\n')
        .filter((l) => l.trim() !== '')
        .pop() ?? '',
  }
}

function show(r: Receipt): string {
  const tail = r.answer ?? r.reason
  return `${r.agent}  ${r.status}${tail === undefined || tail === '' ? '' : `: ${tail}`}`
}

async function track(
  daemon: ControlClient,
  channel: string,
  receipts: Receipt[],
  waitMs: number,
  out: Out,
  json: boolean,
): Promise<void> {
  const deadline = Date.now() + waitMs
  while (receipts.some((r) => !final(r.status)) && Date.now() < deadline) {
    const [items, sessions] = await Promise.all([
      daemon.request('history', { channel, limit: 1000 }),
      daemon.request('sessions'),
    ])
    for (const r of receipts) {
      if (final(r.status) || r.prompt === undefined) continue
      const reply = items.find(
        (i) =>
          i.event.tags.some((t) => t[0] === 'e' && t[1] === r.prompt && t[3] === 'root') &&
          !i.event.tags.some((t) => t[0] === 'notice'),
      )
      const next: Partial<Receipt> = reply
        ? outcomeOf(reply.event)
        : sessions.some((s) => s.thread === r.prompt)
          ? { status: 'started' }
          : {}
      if (next.status !== undefined && next.status !== r.status) {
        Object.assign(r, next)
        if (!json) out.line(show(r))
      }
    }
    if (receipts.some((r) => !final(r.status))) await new Promise((res) => setTimeout(res, 250))
  }
}

export async function runBroadcast(argv: string[], out: Out): Promise<number> {
  const parsed = broadcastCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  const channel = parseChannel(positionals[0]!)
  const text = positionals[1]!
  if ((values.agents === undefined) === (values.all !== true))
    throw new KithError('usage', 'name the agents: --agents a,b or --all')
  const waitMs = values.wait === undefined ? 120_000 : Number(values.wait) * 1000
  if (!Number.isFinite(waitMs) || waitMs <= 0)
    throw new KithError('usage', '--wait takes a number of seconds')
  const names =
    values.agents !== undefined
      ? values.agents
          .split(',')
          .map((n) => n.trim().replace(/^@/, ''))
          .filter((n) => n !== '')
      : (() => {
          const now = Math.floor(Date.now() / 1000)
          return keyRows(openLocalFleet(), 'agent', now)
            .filter((r) => r.status === 'active' && r.name !== '')
            .map((r) => r.name)
        })()
  if (names.length === 0) throw new KithError('not-found', 'no agents to send to')
  const daemon = await requireNode('kith broadcast needs the node running: start kith up')
  const json = values.json === true
  try {
    const receipts: Receipt[] = []
    for (const agent of names) {
      try {
        const sent = await daemon.request('send', {
          channel,
          text: `@${agent} ${text}`,
        })
        receipts.push({ agent, status: 'queued', prompt: sent.event.id })
      } catch (err) {
        // Not sent at all (a name that is no agent here, a revoked one): refused, with why.
        if (!(err instanceof KithError)) throw err
        receipts.push({ agent, status: 'refused', reason: err.message })
      }
      if (!json) out.line(show(receipts[receipts.length - 1]!))
    }
    await track(daemon, channel, receipts, waitMs, out, json)
    if (json) out.json({ channel, receipts })
    else
      for (const r of receipts.filter((x) => !final(x.status)))
        out.line(`${r.agent}  ${r.status}: no outcome within ${waitMs / 1000} s`)
    return receipts.every((r) => r.status === 'answered') ? 0 : 1
  } finally {
    daemon.close()
  }
}

/** What the command index loads. */
export { broadcastCommand as command, runBroadcast as run }
