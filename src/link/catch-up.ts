import type { NostrEvent } from '../events/event.js'
import type { RelayClient } from './relay-client.js'
import { backoffMs, type Backoff } from './backoff.js'

/**
 * How a device follows a hub (kith-chat/1, "A node's link to a hub"), in the parts a node's
 * link (hub-link.ts, over `ws`) and the browser's (over its WebSocket) share: the catch-up
 * window, the pages, and the reconnect backoff. No Node built-ins.
 */

/** Catch-up starts this long before the cursor, so late or skewed events are not missed. */
export const catchUpOverlapSeconds = 3600
/** Without a cursor, history starts this far back. */
export const firstSyncSeconds = 7 * 86400
/** Events per catch-up page. */
export const defaultPageSize = 2000
/** A catch-up page may take a while on a big hub; past this the link is dropped and retried. */
export const pageTimeoutMs = 60_000

/** Where catch-up starts: the cursor minus the overlap, or (no cursor) the first-sync window. */
export function catchUpSince(
  cursor: number | undefined,
  startedAt: number,
  opts: { overlapSeconds?: number; firstSyncSeconds?: number } = {},
): number {
  return cursor === undefined
    ? Math.max(0, startedAt - (opts.firstSyncSeconds ?? firstSyncSeconds))
    : Math.max(0, cursor - (opts.overlapSeconds ?? catchUpOverlapSeconds))
}

/**
 * The filter for the authority kinds (grants, revocations, definitions, profiles, envelopes) on
 * a connect: whole the first time a device follows a hub, then from the authority cursor (the
 * start of the last connect whose authority fetch completed) with the catch-up overlap, so a
 * fleet with many revocations costs a reconnect only what is new. An event older than the
 * overlap that reaches the hub while the device is away comes live or, on a node, by the
 * reconciliation of the authority kinds (hub-link.ts).
 */
export function authorityFilter(
  kinds: number[],
  cursor: number | undefined,
  startedAt: number,
  opts: { overlapSeconds?: number } = {},
): { kinds: number[]; since?: number } {
  if (cursor === undefined) return { kinds }
  return { kinds, since: catchUpSince(cursor, startedAt, opts) }
}

/**
 * The wait before reconnect attempt `attempt` (0-based): exponential from 0.5 s to 20 s,
 * jittered to 50–100% so many devices do not return in step.
 */
export function reconnectDelayMs(attempt: number, random: () => number = Math.random): number {
  return backoffMs(attempt, reconnectBackoff, random)
}

/** A link's reconnect: 0.5 s doubling to 20 s, jittered down to half. */
export const reconnectBackoff: Backoff = { firstMs: 500, maxMs: 20_000, jitter: [0.5, 1] }

/**
 * Pages backwards from `until` through everything matching `filter`, newest first, each page
 * delivered (and processed) before the next is asked for. `until` is inclusive: the boundary
 * second is asked for again and duplicates are dropped downstream. A page full of one second's
 * events is stepped past with a warning: NIP-01 has no finer cursor. Returns how many events
 * came.
 */
export async function pageBackwards(
  client: RelayClient,
  filter: Record<string, unknown>,
  until: number,
  opts: {
    deliver: (events: NostrEvent[]) => Promise<void>
    log: (line: string) => void
    pageSize?: number
    timeoutMs?: number
  },
): Promise<number> {
  const size = opts.pageSize ?? defaultPageSize
  let upper = until
  let total = 0
  for (;;) {
    const events = await client.query([{ ...filter, until: upper, limit: size }], {
      timeoutMs: opts.timeoutMs ?? pageTimeoutMs,
    })
    await opts.deliver(events)
    total += events.length
    if (events.length < size) return total
    const oldest = events.reduce((m, e) => Math.min(m, e.created_at), upper)
    if (oldest >= upper) {
      opts.log(`${client.url}: more than ${size} events at ${oldest}; stepping past that second`)
      upper = oldest - 1
    } else upper = oldest
    if (typeof filter.since === 'number' && upper < filter.since) return total
  }
}
