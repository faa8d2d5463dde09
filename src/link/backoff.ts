/**
 * The one exponential backoff: `firstMs · 2^attempt`, capped at `maxMs`, then jittered by a
 * factor drawn from [low, high) (so many clients that lost the same hub do not return at once).
 * A link's reconnect (catch-up.ts), a peer link's retry, the notifier's resend and an agent's
 * respawn each name their numbers and call this. Pure: no Node built-in (the browser uses it).
 */
export interface Backoff {
  firstMs: number
  maxMs: number
  /** The jitter factor's range; [1, 1] for none. */
  jitter: readonly [low: number, high: number]
}

export function backoffMs(attempt: number, b: Backoff, random: () => number = Math.random): number {
  const base = Math.min(b.maxMs, b.firstMs * 2 ** attempt)
  const [low, high] = b.jitter
  return Math.round(base * (low + random() * (high - low)))
}
