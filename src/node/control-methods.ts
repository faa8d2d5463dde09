import { KithError } from '../errors.js'
import type { NostrEvent } from '../events/event.js'
import { sessionActionOf, type SessionAction } from '../events/session-control.js'
import { sessionStartOf, type SessionStart } from '../events/session-start.js'
import type { SessionState } from '../events/session-state.js'
import type { OpenCard } from './permission-cards.js'
import type { ChatItem } from './chat-store.js'
import type { WatchFrame } from './observer-frames.js'
import type { Delivery } from './outbox-pump.js'
import type { AgentHost, NodeStatus } from './node-status.js'

/**
 * The control socket's methods (KITH_HOME/node.sock, node/control.ts): each method's params and
 * result, one map that the node's handlers (node/control-handlers.ts) are checked against and
 * the CLI's client (cli/control-client.ts) is typed by, as the ACP SDK types its methods. What
 * comes over the socket is untrusted JSON until `controlParams` has read it.
 */
export interface ControlMethods {
  status: { params: NoParams; result: NodeStatus }
  /** Signs and sends a chat message; waits (briefly) for the first hub's answer. */
  send: { params: SendParams; result: { event: NostrEvent; deliveries: Delivery[] } }
  /** Streams `chat` notifications (of one channel, or all) to this client. */
  subscribe: { params: { channel?: string }; result: { ok: true } }
  history: { params: HistoryParams; result: ChatItem[] }
  channels: { params: NoParams; result: { name: string; messages: number; last: number | null }[] }
  /** Signs and sends a decision on a card (kith permit, /allow in kith chat, kith acp). */
  decide: { params: DecideParams; result: DecideResult }
  cards: { params: CardsParams; result: OpenCard[] }
  'cards-sealed': { params: CardsParams; result: { count: number } }
  /** A cancel (4144) for the agents working in a channel (all, or one; one prompt's turn). */
  cancel: { params: CancelParams; result: CancelResult }
  /** kith chat: whether the agents of the turns it shows can still finish them. */
  hosts: { params: { agents: string[] }; result: AgentHost[] }
  metrics: {
    params: NoParams
    result: { turns: { inMs: number; outMs: number; turnMs: number }[] }
  }
  /** Streams `frame` notifications (of all agents, or the one named) to this client. */
  watch: { params: { agent?: string }; result: { ok: true } }
  /** kith acp: the agent a name means here, and the machine whose presence says it hosts it. */
  agent: { params: { name: string }; result: { pubkey: string; name: string; host: string | null } }
  sessions: { params: NoParams; result: SessionState[] }
  'session-request': { params: { session: string; request: SessionAction }; result: { id: string } }
  'session-answer': { params: { request: string }; result: NostrEvent | null }
  /** kith agent add/set changed an agent's grant or settings: taken in now. */
  'agents-changed': { params: NoParams; result: { ok: true } }
  /** A CLI command changed grants in node.db: taken in and sent out now. */
  'grants-changed': { params: NoParams; result: { ok: true } }
}

/** What the node streams to clients that asked (`{method, params}` lines without an id). */
export interface ControlNotifications {
  chat: ChatItem
  frame: WatchFrame
  /** The node is stopping: the connection ends next. */
  stopping: NoParams
}

export type ControlMethod = keyof ControlMethods
export type ControlParams<M extends ControlMethod> = ControlMethods[M]['params']
export type ControlResult<M extends ControlMethod> = ControlMethods[M]['result']

export type NoParams = Record<string, never>

export type SendParams = {
  channel: string
  text: string
  /** The message it answers (its thread). */
  reply?: string
  /** Stops the agent's turn in the thread and prompts it with this at once. */
  interrupt?: boolean
  /** kith session new: where the agent's new session starts. */
  session?: SessionStart
  /** How long to wait for the first hub's answer (ms). */
  waitMs?: number
}

export type HistoryParams = { channel?: string; since?: number; limit?: number }

export type DecideParams = {
  /** A card's id (or prefix), or @agent for its one open card. */
  request: string
  /** An option's number (1-based), id, or allow/always/reject. */
  option: string | number
  channel?: string
}

export type DecideResult = {
  event: NostrEvent
  request: string
  /** What the answer answered: the request's title and agent, so the answer can name it. */
  title: string
  agent: string
  option: { optionId: string; name: string }
}

export type CardsParams = { channel?: string; agent?: string }

export type CancelParams = { channel: string; agent?: string; prompt?: string }

export type CancelResult = {
  event: NostrEvent
  prompts: number
  /** Why it may stop nothing (no online device reports running the agent), if so. */
  warning?: string
}

/** Reads one method's params from a request's untrusted JSON, or throws a coded error. */
export type ParamsReader<M extends ControlMethod> = (raw: unknown) => ControlParams<M>

/**
 * The one reader of each method's params: the server reads every request through it before a
 * handler sees it. A wrong shape is `usage` with reason `bad-params`, naming the method and field.
 */
export const controlParams: { [M in ControlMethod]: ParamsReader<M> } = {
  status: none('status'),
  send: (raw) => {
    const p = fields('send', raw)
    return {
      channel: p.str('channel'),
      text: p.str('text'),
      ...p.opt('reply', p.str),
      ...p.opt('interrupt', p.bool),
      ...p.opt('session', (k) => sessionStartOf(p.value(k))),
      ...p.opt('waitMs', p.num),
    }
  },
  subscribe: (raw) => {
    const p = fields('subscribe', raw)
    return { ...p.opt('channel', p.str) }
  },
  history: (raw) => {
    const p = fields('history', raw)
    return { ...p.opt('channel', p.str), ...p.opt('since', p.num), ...p.opt('limit', p.num) }
  },
  channels: none('channels'),
  decide: (raw) => {
    const p = fields('decide', raw)
    return { request: p.str('request'), option: p.strOrNum('option'), ...p.opt('channel', p.str) }
  },
  cards: (raw) => cardsParams('cards', raw),
  'cards-sealed': (raw) => cardsParams('cards-sealed', raw),
  cancel: (raw) => {
    const p = fields('cancel', raw)
    return { channel: p.str('channel'), ...p.opt('agent', p.str), ...p.opt('prompt', p.str) }
  },
  hosts: (raw) => ({ agents: fields('hosts', raw).strings('agents') }),
  metrics: none('metrics'),
  watch: (raw) => {
    const p = fields('watch', raw)
    return { ...p.opt('agent', p.str) }
  },
  agent: (raw) => ({ name: fields('agent', raw).str('name') }),
  sessions: none('sessions'),
  'session-request': (raw) => {
    const p = fields('session-request', raw)
    return {
      session: p.str('session'),
      request: sessionActionOf(p.object('request'), 'session-request: request'),
    }
  },
  'session-answer': (raw) => ({ request: fields('session-answer', raw).str('request') }),
  'agents-changed': none('agents-changed'),
  'grants-changed': none('grants-changed'),
}

function cardsParams(method: ControlMethod, raw: unknown): CardsParams {
  const p = fields(method, raw)
  return { ...p.opt('channel', p.str), ...p.opt('agent', p.str) }
}

/** A method that takes nothing: params, when sent, must still be an object. */
function none(method: ControlMethod): (raw: unknown) => NoParams {
  return (raw) => {
    fields(method, raw)
    return {}
  }
}

/** The error a wrong params shape gets, over the socket as `{code: 'usage', …}`. */
export function badParams(method: string, what: string): KithError {
  return new KithError('usage', `control ${method}: ${what}`, { reason: 'bad-params' })
}

/** Typed reads of one request's params object; each failed read is a `bad-params` error. */
function fields(method: string, raw: unknown) {
  if (raw === undefined || raw === null) raw = {}
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw badParams(method, 'params must be an object')
  const o = raw as Record<string, unknown>
  const want = (k: string, v: unknown, what: string): never => {
    throw badParams(method, `${k} must be ${what}, not ${v === null ? 'null' : typeof v}`)
  }
  const reader = {
    value: (k: string): unknown => o[k],
    str: (k: string): string => (typeof o[k] === 'string' ? o[k] : want(k, o[k], 'a string')),
    num: (k: string): number =>
      typeof o[k] === 'number' && Number.isFinite(o[k]) ? o[k] : want(k, o[k], 'a number'),
    bool: (k: string): boolean => (typeof o[k] === 'boolean' ? o[k] : want(k, o[k], 'a boolean')),
    strOrNum: (k: string): string | number => {
      const v = o[k]
      return typeof v === 'string' || typeof v === 'number' ? v : want(k, v, 'a string or number')
    },
    strings: (k: string): string[] => {
      const v = o[k]
      return Array.isArray(v) && v.every((x) => typeof x === 'string')
        ? v
        : want(k, v, 'a list of strings')
    },
    object: (k: string): Record<string, unknown> => {
      const v = o[k]
      return typeof v === 'object' && v !== null && !Array.isArray(v)
        ? (v as Record<string, unknown>)
        : want(k, v, 'an object')
    },
    /** `{[k]: read(k)}` when the field is there, `{}` when it is absent. */
    opt: <K extends string, T>(k: K, read: (k: K) => T): { [P in K]?: T } =>
      o[k] === undefined ? {} : ({ [k]: read(k) } as { [P in K]?: T }),
  }
  return reader
}
