import { backoffMs, type Backoff } from './backoff.js'
import { relayVerdict, saysRevoked, type OkAnswer } from './relay-client.js'

/**
 * What a hub's answer to a kept (outbox) event means, decided once for the node's outbox
 * (`node/outbox-pump.ts`) and the browser's (`web/app/lib/fleet-client.ts`); each keeps its own I/O
 * (node.db, IndexedDB) and acts on the outcome. Pure and browser-safe.
 *
 * - `delivered`: OK true, or a refusal that only says the hub already holds it (NIP-01
 *   `duplicate:`): the hub has the event. Never sent to that hub again.
 * - `refused`: a refusal for good (`invalid:`, `blocked:`, `restricted:`, `pow:`, no prefix …, and
 *   `rate-limited: quota:`, a person's storage quota that only the hub's operator raises,
 *   kith-hub): kept and shown to the person with the hub's words, never retried blindly.
 * - `retry`: the answer says "not now" (`rate-limited:`, `error:`, `auth-required:`) or no answer
 *   came (the connection dropped, the request timed out): the event stays queued and goes again
 *   after `outboxRetryDelayMs`, or when the link is next live.
 * - `revoked`: the hub says this key is revoked (`restricted: revoked`, kith-hub): nothing more
 *   goes to that hub on this link; the event stays queued (the device judges the claim against
 *   its own grants, grants/hub-revoked.ts, and a wrong hub must not cost it the event).
 */
export type OutboxOutcome = 'delivered' | 'refused' | 'retry' | 'revoked'

export interface OutboxDecision {
  outcome: OutboxOutcome
  /** The hub's words (or why no answer came), for the record and the person. */
  message: string
}

/** NIP-01 prefixes that say "not now" rather than "never". */
const transientCodes: ReadonlySet<string> = new Set(['rate-limited', 'error', 'auth-required'])

/** What an OK answer to a kept event means. */
export function outboxOutcome(answer: OkAnswer): OutboxDecision {
  const message = answer.message
  if (answer.ok) return { outcome: 'delivered', message }
  if (saysRevoked(message)) return { outcome: 'revoked', message }
  const code = relayVerdict(message).code
  if (code === 'duplicate') return { outcome: 'delivered', message }
  if (code === 'rate-limited' && saysQuota(message)) return { outcome: 'refused', message }
  if (transientCodes.has(code)) return { outcome: 'retry', message }
  return { outcome: 'refused', message }
}

/** A storage quota is full (kith-hub, "rate-limited: quota: …"): time alone does not empty it. */
function saysQuota(message: string): boolean {
  return /^quota:/.test(relayVerdict(message).reason)
}

/** No answer came (the publish rejected: the link dropped, or it timed out): try again later. */
export function outboxFailure(err: unknown): OutboxDecision {
  return { outcome: 'retry', message: err instanceof Error ? err.message : String(err) }
}

/**
 * Whether the rest of the outbox may go on to this hub after `d`: a delivered or refused event is
 * done with and the next one goes; after `retry` or `revoked` the same would happen to the rest.
 */
export function outboxContinues(d: OutboxDecision): boolean {
  return d.outcome === 'delivered' || d.outcome === 'refused'
}

/**
 * An outbox's retry after `retry` answers in a row: 1 s doubling to a minute, jittered down to
 * half (a hub that rate-limits many devices at once does not get them back in step).
 */
export const outboxRetryBackoff: Backoff = { firstMs: 1000, maxMs: 60_000, jitter: [0.5, 1] }

export function outboxRetryDelayMs(attempt: number, random: () => number = Math.random): number {
  return backoffMs(attempt, outboxRetryBackoff, random)
}
