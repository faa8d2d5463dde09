import type { EventTemplate, NostrEvent } from './event.js'
import { Kind } from './kinds.js'
import {
  hexKey,
  invalid,
  jsonObject,
  oneChannel,
  oneTag,
  optionalFleet,
  requireKind,
} from './agent-event-parts.js'
import { sessionAddress } from './session-state.js'

/**
 * Kind 4150 (kith-agents, "Sessions"): a person's request about one session, signed by their
 * device: close it (`keep`: leave its worktree; `force`: remove it with what it holds), set its
 * mode or model, or show its branch's diff (`diff`, answered in the notice). The hosting node acts
 * on it only from someone its agent's approvers policy allows, and answers with a notice in the
 * session's thread that names the request (`e` … `mention`).
 */

export type SessionAction =
  | { action: 'close'; keep?: boolean; force?: boolean }
  | { action: 'set'; mode?: string; model?: string; options?: Record<string, string> }
  | { action: 'command'; name: string; input?: string }
  /** Its branch's diff against its base, answered in the notice (a worktree session). */
  | { action: 'diff' }

export interface SessionControlSpec {
  agent: string
  channel: string
  thread?: string
  fleet: string
  request: SessionAction
}

export interface SessionControl extends SessionControlSpec {
  id: string
  author: string
  createdAt: number
  address: string
  fleet: string
}

/** The unsigned request: `d`-like `session` tag, `h`, `p` (the agent), `fleet`; content the action. */
export function makeSessionControl(spec: SessionControlSpec, createdAt: number): EventTemplate {
  const tags: string[][] = [
    ['session', sessionAddress(spec.agent, spec.channel, spec.thread)],
    ['h', spec.channel],
    ['p', spec.agent],
    ['fleet', spec.fleet],
  ]
  return {
    kind: Kind.SessionControl,
    created_at: createdAt,
    tags,
    content: JSON.stringify(spec.request),
  }
}

const optStr = (v: unknown) => v === undefined || typeof v === 'string'
/** Absent, or config option ids to string values. */
const optionMap = (v: unknown): v is Record<string, string> | undefined =>
  v === undefined ||
  (typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    Object.values(v).every((x) => typeof x === 'string'))

/**
 * Reads a kind-4150 event. Throws KithError('invalid') with reason `wrong-kind`, `bad-tags` (no
 * fleet, a `session` that is not this `p` and `h`'s) or `bad-content` (an unknown action, a
 * `set` that sets nothing).
 */
export function parseSessionControl(event: NostrEvent): SessionControl {
  const what = 'session control'
  requireKind(event, Kind.SessionControl, what)
  const channel = oneChannel(event)
  const agent = hexKey(oneTag(event, 'p'), 'p')
  const address = oneTag(event, 'session')
  const fleet = optionalFleet(event)
  if (fleet === undefined) throw invalid('bad-tags', 'a session control names its fleet')
  const prefix = `${agent}:${channel}:`
  if (!address.startsWith(prefix))
    throw invalid('bad-tags', `session must be ${prefix}THREAD (THREAD a root id or main)`)
  const threadPart = address.slice(prefix.length)
  if (threadPart !== 'main' && !/^[0-9a-f]{64}$/.test(threadPart))
    throw invalid('bad-tags', 'the thread of session is a 64-hex root id or main')
  const request = sessionActionOf(jsonObject(event.content, what), what)
  return {
    id: event.id,
    author: event.pubkey,
    createdAt: event.created_at,
    address,
    agent,
    channel,
    ...(threadPart === 'main' ? {} : { thread: threadPart }),
    fleet,
    request,
  }
}

/**
 * A session request's action read from untrusted JSON (a 4150's content, a control request's
 * params): a close, a set of mode, model or options, a command or a diff, or a coded error.
 */
export function sessionActionOf(
  c: Record<string, unknown>,
  what = 'session control',
): SessionAction {
  let request: SessionAction
  if (
    c.action === 'close' &&
    (c.keep === undefined || typeof c.keep === 'boolean') &&
    (c.force === undefined || typeof c.force === 'boolean')
  )
    request = {
      action: 'close',
      ...(c.keep === true ? { keep: true } : {}),
      ...(c.force === true ? { force: true } : {}),
    }
  else if (
    c.action === 'set' &&
    optStr(c.mode) &&
    optStr(c.model) &&
    optionMap(c.options) &&
    (c.mode !== undefined ||
      c.model !== undefined ||
      (c.options !== undefined && Object.keys(c.options).length > 0))
  )
    request = {
      action: 'set',
      ...(typeof c.mode === 'string' ? { mode: c.mode } : {}),
      ...(typeof c.model === 'string' ? { model: c.model } : {}),
      ...(c.options === undefined ? {} : { options: c.options }),
    }
  else if (c.action === 'command' && typeof c.name === 'string' && optStr(c.input))
    request = {
      action: 'command',
      name: c.name,
      ...(typeof c.input === 'string' ? { input: c.input } : {}),
    }
  else if (c.action === 'diff') request = { action: 'diff' }
  else
    throw invalid(
      'bad-content',
      `${what}: not a close, a set of mode or model, a command or a diff`,
    )
  return request
}
