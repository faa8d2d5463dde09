import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js'
import type { EventTemplate, NostrEvent } from './event.js'
import { isHex64 } from './event.js'
import { Kind } from './kinds.js'
import {
  hexKey,
  invalid,
  jsonObject,
  oneChannel,
  oneTag,
  optionalFleet,
  requireKind,
  tagValues,
} from './agent-event-parts.js'

/**
 * Kind 34150 (kith-agents, "Sessions"): one agent session as the node hosting it reports it,
 * signed by that node's device key. Addressable: `d` is `AGENT:CHANNEL:THREAD` (THREAD the root
 * event id, or `main` for the channel's main thread), so each report replaces the last and any
 * device of the fleet lists the sessions by reading the newest of each.
 */

export type SessionStatus = 'idle' | 'working' | 'awaiting-permission' | 'closed'
const statuses: readonly SessionStatus[] = ['idle', 'working', 'awaiting-permission', 'closed']

export interface SessionUsage {
  /** Tokens in the context now, and its size (ACP usage_update). */
  used?: number
  size?: number
  cost?: { amount: number; currency: string }
}

/** What a session state event says (the content's fields and the tags). */
export interface SessionStateSpec {
  agent: string
  channel: string
  /** The thread's root event id; absent: the channel's main thread. */
  thread?: string
  status: SessionStatus
  title?: string
  cwd?: string
  project?: string
  worktree?: { path: string; branch: string }
  /** The agent's own session id (ACP). */
  acpSession?: string
  createdAt?: number
  /** Last activity (a turn began or ended), unix seconds. */
  activeAt?: number
  mode?: string
  modes?: { id: string; name: string }[]
  model?: string
  models?: string[]
  /** The session's other ACP config options (the model's is `model`): id, name, value, choices. */
  options?: { id: string; name: string; value: string; values: string[] }[]
  /** The agent's commands (available_commands_update), runnable as /name in the thread. */
  commands?: { name: string; description: string }[]
  usage?: SessionUsage
}

/** A parsed kind-34150 event. */
export interface SessionState extends SessionStateSpec {
  /** The short id people type: the first 12 hex of SHA-256 of `d`. */
  id: string
  address: string
  host: string
  fleet: string | undefined
  reportedAt: number
}

/** The `d` of a session: `AGENT:CHANNEL:THREAD`, THREAD `main` for the main thread. */
export function sessionAddress(agent: string, channel: string, thread?: string): string {
  return `${agent}:${channel}:${thread === undefined || thread === '' ? 'main' : thread}`
}

/** The short id of a session (what `kith session show ID` takes): 12 hex of SHA-256(d). */
export function sessionShortId(address: string): string {
  return bytesToHex(sha256(utf8ToBytes(address))).slice(0, 12)
}

/**
 * The unsigned report (signed by the hosting device): `d`, `h`, `p` (the agent), `fleet`, an
 * `e` root when the session is a thread, `status`; content: the rest as a JSON object.
 */
export function makeSessionState(
  spec: SessionStateSpec,
  fleet: string,
  createdAt: number,
): EventTemplate {
  const { agent, channel, thread, status, ...rest } = spec
  const tags: string[][] = [
    ['d', sessionAddress(agent, channel, thread)],
    ['h', channel],
    ['p', agent],
    ['fleet', fleet],
  ]
  if (thread !== undefined && thread !== '') tags.push(['e', thread, '', 'root'])
  tags.push(['status', status])
  return { kind: Kind.SessionState, created_at: createdAt, tags, content: JSON.stringify(rest) }
}

const str = (v: unknown): v is string => typeof v === 'string'
const num = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v)

/**
 * Reads a kind-34150 event. Throws KithError('invalid') with reason `wrong-kind`, `bad-tags`
 * (a `d` that is not its `p:h:thread`, an unknown status) or `bad-content`. Unknown content
 * fields are ignored; known ones of the wrong type are dropped, never trusted.
 */
export function parseSessionState(event: NostrEvent): SessionState {
  const what = 'session state'
  requireKind(event, Kind.SessionState, what)
  const channel = oneChannel(event)
  const agent = hexKey(oneTag(event, 'p'), 'p')
  const address = oneTag(event, 'd')
  const roots = event.tags.filter((t) => t[0] === 'e' && t[3] === 'root').map((t) => t[1] ?? '')
  if (roots.length > 1 || (roots[0] !== undefined && !isHex64(roots[0])))
    throw invalid('bad-tags', 'a session names at most one thread root (64 hex)')
  const thread = roots[0]
  if (address !== sessionAddress(agent, channel, thread))
    throw invalid('bad-tags', `d must be ${sessionAddress(agent, channel, thread)}`)
  const status = tagValues(event, 'status')
  if (status.length !== 1 || !statuses.includes(status[0] as SessionStatus))
    throw invalid('bad-tags', `status must be one of ${statuses.join(', ')}`)
  const c = jsonObject(event.content, what)
  const out: SessionState = {
    id: sessionShortId(address),
    address,
    host: event.pubkey,
    fleet: optionalFleet(event),
    reportedAt: event.created_at,
    agent,
    channel,
    ...(thread === undefined ? {} : { thread }),
    status: status[0] as SessionStatus,
  }
  for (const key of ['title', 'cwd', 'project', 'acpSession', 'mode', 'model'] as const)
    if (str(c[key])) out[key] = c[key]
  for (const key of ['createdAt', 'activeAt'] as const) if (num(c[key])) out[key] = c[key]
  const wt = c.worktree as { path?: unknown; branch?: unknown } | undefined
  if (wt !== undefined && str(wt.path) && str(wt.branch))
    out.worktree = { path: wt.path, branch: wt.branch }
  if (Array.isArray(c.modes))
    out.modes = (c.modes as { id?: unknown; name?: unknown }[]).flatMap((m) =>
      str(m.id) ? [{ id: m.id, name: str(m.name) ? m.name : m.id }] : [],
    )
  if (Array.isArray(c.models)) out.models = (c.models as unknown[]).filter(str)
  if (Array.isArray(c.options))
    out.options = (c.options as Record<string, unknown>[]).flatMap((o) =>
      str(o.id) && str(o.value)
        ? [
            {
              id: o.id,
              name: str(o.name) ? o.name : o.id,
              value: o.value,
              values: Array.isArray(o.values) ? (o.values as unknown[]).filter(str) : [],
            },
          ]
        : [],
    )
  if (Array.isArray(c.commands))
    out.commands = (c.commands as { name?: unknown; description?: unknown }[]).flatMap((m) =>
      str(m.name) ? [{ name: m.name, description: str(m.description) ? m.description : '' }] : [],
    )
  const u = c.usage as Record<string, unknown> | undefined
  if (typeof u === 'object' && u !== null) {
    const usage: SessionUsage = {}
    if (num(u.used)) usage.used = u.used
    if (num(u.size)) usage.size = u.size
    const cost = u.cost as { amount?: unknown; currency?: unknown } | undefined
    if (cost !== undefined && num(cost.amount) && str(cost.currency))
      usage.cost = { amount: cost.amount, currency: cost.currency }
    out.usage = usage
  }
  return out
}
