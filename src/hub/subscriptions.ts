import type { NostrEvent } from '../events/event.js'
import { matchFilters, type Filter } from '../events/filter.js'

/** Live subscriptions of every connection, for fan-out after EOSE. */
export class SubscriptionIndex<C> {
  private readonly byConnection = new Map<C, Map<string, Filter[]>>()

  /** Adds or replaces (same id, NIP-01) a subscription; `count` says how many the connection has. */
  set(conn: C, subId: string, filters: Filter[]): void {
    let subs = this.byConnection.get(conn)
    if (subs === undefined) {
      subs = new Map()
      this.byConnection.set(conn, subs)
    }
    subs.set(subId, filters)
  }

  has(conn: C, subId: string): boolean {
    return this.byConnection.get(conn)?.has(subId) ?? false
  }

  count(conn: C): number {
    return this.byConnection.get(conn)?.size ?? 0
  }

  ids(conn: C): string[] {
    return [...(this.byConnection.get(conn)?.keys() ?? [])]
  }

  delete(conn: C, subId: string): void {
    this.byConnection.get(conn)?.delete(subId)
  }

  dropConnection(conn: C): void {
    this.byConnection.delete(conn)
  }

  /** The ids of `conn`'s subscriptions that match `event`. */
  matching(conn: C, event: NostrEvent): string[] {
    const out: string[] = []
    for (const [subId, filters] of this.byConnection.get(conn) ?? [])
      if (matchFilters(filters, event)) out.push(subId)
    return out
  }

  /** Calls `deliver` once per matching subscription. */
  fanOut(event: NostrEvent, deliver: (conn: C, subId: string) => void): void {
    for (const [conn, subs] of this.byConnection) {
      for (const [subId, filters] of subs) {
        if (matchFilters(filters, event)) deliver(conn, subId)
      }
    }
  }

  get size(): number {
    let n = 0
    for (const subs of this.byConnection.values()) n += subs.size
    return n
  }
}
