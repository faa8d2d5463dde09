import type { NostrEvent } from '../events/event.js'
import type { Filter } from '../events/filter.js'
import type { EventStore } from './event-store.js'

/**
 * A node's read of its own store says how much it wants: a `limit`, or the `ids` it names. The
 * hub's page limits (`defaultLimit`, `maxLimit`) bound what strangers may ask; a node asks its
 * own node.db, so the bound is the caller's, stated once in the filter.
 */
export type NodeFilter = Filter & ({ limit: number } | { ids: string[] })

/** The most one read returns, whatever its filter says (`kith log --limit` at most). */
export const nodeReadMax = 100_000

/**
 * The node's reads of its events (node.db): parsed events, newest first, with the node's own
 * limits. Writes, catch-up cursors and the sets of replay stay on `EventStore`.
 */
export class NodeReads {
  constructor(private readonly store: EventStore) {}

  /** The stored event with this id, a kept older version included. */
  event(id: string): NostrEvent | undefined {
    return this.store.getEvent(id)
  }

  /** The newest stored event matching `filter` (its `limit` aside). */
  newest(filter: Filter): NostrEvent | undefined {
    return this.events({ ...filter, limit: 1 })[0]
  }

  /** Events matching `filter`, newest first: at most its `limit`, else as many as its `ids`. */
  events(filter: NodeFilter): NostrEvent[] {
    return this.withArrival(filter).map((r) => r.event)
  }

  /** As `events`, each with its arrival order here (`seq`), for a causal order of history. */
  withArrival(filter: NodeFilter): { event: NostrEvent; seq: number }[] {
    const limit = Math.min(filter.limit ?? filter.ids?.length ?? 0, nodeReadMax)
    return this.store
      .query([filter], { defaultLimit: limit, maxLimit: limit })
      .map((r) => ({ event: JSON.parse(r.raw) as NostrEvent, seq: r.seq }))
  }
}
