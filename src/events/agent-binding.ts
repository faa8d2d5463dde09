import type { NostrEvent } from './event.js'
import { Kind } from './kinds.js'

/**
 * Binding of agent events to their fleet, their turn and the moment they were made
 * (kith-agents/1, "Binding"). Pure: the hosting node and the hub decide with these.
 */

/**
 * How far from the hosting node's clock a cancel (4144), an interrupt or a permission decision
 * (4143) may be dated and still act. Five minutes: a permission card lives 5 minutes, so an older
 * answer can only meet a request that is gone; a cancel or an interrupt is a reaction to what an
 * agent is doing now, and one held back longer (in an outbox, by a hub, by a member replaying it)
 * must not stop a turn nobody saw. It still tolerates minutes of clock skew between machines and
 * a hub link that was down for a while. Plain prompts are not bound by age: a queued message is
 * meant to run whenever it arrives.
 */
export const controlMaxAgeSeconds = 300
/** The same bound ahead of the clock (a sender whose clock runs fast). */
export const controlMaxFutureSeconds = 300

/** Kinds that name their fleet with a `fleet` tag (as grants do) so they cannot be replayed into another. */
export const fleetBoundKinds: ReadonlySet<number> = new Set([
  Kind.ChatMessage,
  Kind.PermissionRequest,
  Kind.PermissionDecision,
  Kind.AgentControl,
])

export type FleetTag =
  { status: 'absent' } | { status: 'one'; fleet: string } | { status: 'several' }

/** The event's `fleet` tag: absent, exactly one (its value), or several (malformed). */
export function fleetTagOf(event: Pick<NostrEvent, 'tags'>): FleetTag {
  const values = event.tags.filter((t) => t[0] === 'fleet').map((t) => t[1] ?? '')
  if (values.length === 0) return { status: 'absent' }
  if (values.length > 1) return { status: 'several' }
  return { status: 'one', fleet: values[0]! }
}

export type Check = { ok: true } | { ok: false; reason: string }

/**
 * For a hub or node of `fleet`: an event of a fleet-bound kind whose `fleet` tag names another
 * fleet (or that carries several) is refused, whatever its author may do here: it was made for
 * another fleet that shares the key. An event without the tag passes this check (older clients,
 * plain NIP-01 clients); what needs the tag requires it separately (`requireFleet`).
 */
export function checkFleetTag(event: Pick<NostrEvent, 'kind' | 'tags'>, fleet: string): Check {
  if (!fleetBoundKinds.has(event.kind)) return { ok: true }
  const tag = fleetTagOf(event)
  if (tag.status === 'several') return { ok: false, reason: 'it carries several fleet tags' }
  if (tag.status === 'one' && tag.fleet !== fleet)
    return { ok: false, reason: 'its fleet tag names another fleet' }
  return { ok: true }
}

/** For cancels, interrupts and decisions: the `fleet` tag must be present and name `fleet`. */
export function requireFleet(event: Pick<NostrEvent, 'kind' | 'tags'>, fleet: string): Check {
  const tag = fleetTagOf(event)
  if (tag.status === 'absent')
    return { ok: false, reason: 'it names no fleet (made by an older client?)' }
  return checkFleetTag(event, fleet)
}

/** Minutes or seconds, for a person. */
function ago(seconds: number): string {
  return seconds >= 120 ? `${Math.round(seconds / 60)} min` : `${seconds} s`
}

/** Whether a cancel, interrupt or decision is dated close enough to `now` to act. */
export function checkFresh(event: Pick<NostrEvent, 'created_at'>, now: number): Check {
  const age = now - event.created_at
  if (age > controlMaxAgeSeconds)
    return {
      ok: false,
      reason: `it was made ${ago(age)} ago (older than ${controlMaxAgeSeconds / 60} min is not acted on)`,
    }
  if (-age > controlMaxFutureSeconds)
    return { ok: false, reason: `it is dated ${ago(-age)} ahead of this node's clock` }
  return { ok: true }
}

/**
 * An interrupting prompt's tags: `["interrupt", <prompt id>]` for each turn (named by its
 * prompt's id) it may stop, or a bare `["interrupt"]` when it names none. Not `e` tags: NIP-10
 * clients would show the interrupt as a reply in the thread of the turn it stops.
 */
export function interruptTags(prompts: readonly string[]): string[][] {
  return prompts.length === 0 ? [['interrupt']] : prompts.map((id) => ['interrupt', id])
}

/**
 * The prompts (ids) whose turns an event acts on: for a cancel (4144), its `e` tags; for an
 * interrupting prompt (kind 9), the values of its `interrupt` tags.
 */
export function boundPrompts(event: Pick<NostrEvent, 'kind' | 'tags'>): Set<string> {
  const name = event.kind === Kind.AgentControl ? 'e' : 'interrupt'
  const ids = new Set<string>()
  for (const t of event.tags) if (t[0] === name && t[1] !== undefined && t[1] !== '') ids.add(t[1])
  return ids
}

/**
 * Tag of an agent reply that tells about its prompt without answering it: the prompt still waits
 * in the queue, or its turn still runs (a refused interrupt, a refused or timed-out permission
 * answer). Every other agent reply under a prompt answers it.
 */
export const noticeTag = ['notice'] as const

/** Whether an agent's reply is a `["notice"]` (its prompt is not answered by it). */
export function isNotice(event: Pick<NostrEvent, 'tags'>): boolean {
  return event.tags.some((t) => t[0] === noticeTag[0])
}
