import { KithError } from '../errors.js'
import type { NostrEvent } from '../events/event.js'
import { isEphemeralKind } from '../events/kinds.js'
import { personOf } from '../grants/members.js'
import type { GrantVerifier } from '../grants/verifier.js'
import type { EventStore, Usage } from '../store/event-store.js'
import { quotaExemptKinds } from '../store/hub-schema.js'
import type { HubLimits } from './limits.js'
import { RateLimiter } from './rate-limiter.js'

/**
 * Tag-index rows that cost as much of the hub's main thread as one event: each single-letter tag
 * is a row in the tag index (three B-tree inserts, ~5 µs), against ~100 µs for an event's own
 * checks. An event counts 1 token plus one per this many such tags, so a person's bucket bounds
 * the index rows they make as well as their events: at 1 token each, 100 events/s of 1000 `p`
 * tags held a hub's main thread for 0.5–0.8 s of every second.
 */
export const indexedTagsPerToken = 10

/** Tokens `event` takes from each rate bucket it pays into (see indexedTagsPerToken). */
export function eventTokens(event: NostrEvent): number {
  let indexed = 0
  for (const tag of event.tags) if (tag[0]?.length === 1 && tag[1] !== undefined) indexed++
  return 1 + Math.floor(indexed / indexedTagsPerToken)
}

/** A stored event on its way to the store, counted against its person's quota until it lands. */
export interface Reservation {
  person: string
  bytes: number
}

/**
 * Rate limits and storage quotas of accepted events, by person: every key of a person (owner,
 * devices, agents) shares their bucket and their quota, and the hub has one bucket for everyone.
 * Authority events (grants, revocations, channel definitions) are limited per key instead and
 * never by quota or the hub's bucket: a person must be able to revoke a key while that key, or
 * anyone else, floods. A held revocation (it revokes nothing known) is not authority yet: it
 * pays as any event does.
 */
export class EventLimits {
  private readonly persons: RateLimiter
  private readonly keys: RateLimiter
  private readonly hub: RateLimiter
  /** Events accepted but not yet committed, per person. */
  private readonly pending = new Map<string, Usage>()
  private keysOf = new Map<string, string[]>()
  private keysStamp = ''

  constructor(
    private readonly limits: HubLimits,
    private readonly grants: GrantVerifier,
    private readonly store: EventStore,
  ) {
    const off = limits.eventsPerSecond <= 0
    this.persons = new RateLimiter(limits.eventsPerSecond, limits.eventBurst)
    this.keys = new RateLimiter(limits.eventsPerSecond, limits.eventBurst)
    this.hub = new RateLimiter(off ? 0 : limits.hubEventsPerSecond, limits.hubEventBurst)
  }

  /**
   * Admits `event` (already verified and authorized) or throws KithError('rate-limited') naming
   * the limit. For an event to be stored it returns the reservation to `settle` after the commit.
   */
  take(event: NostrEvent, raw: string, now: number, nowMs: number): Reservation | undefined {
    // A revocation that revokes nothing yet (held) is a person's ordinary storage: quota and
    // bucket. One that takes effect keeps the authority lane, so a key can be cut during a flood.
    const tokens = eventTokens(event)
    const counts =
      tokens === 1 ? '' : ` (this event counts ${tokens}: 1 + 1 per ${indexedTagsPerToken} tags)`
    if (quotaExemptKinds.has(event.kind) && !this.grants.wouldHold(event)) {
      if (!this.keys.take(event.pubkey, nowMs, tokens)) {
        throw new KithError(
          'rate-limited',
          `key: more than ${this.limits.eventsPerSecond} grants, revocations and channel ` +
            `definitions/s from this key${counts}; slow down`,
        )
      }
      return undefined
    }
    const person = personOf(this.grants, event.pubkey, now) ?? event.pubkey
    const stored = !isEphemeralKind(event.kind)
    const bytes = stored ? Buffer.byteLength(raw, 'utf8') : 0
    if (stored) this.checkQuota(person, bytes, now)
    if (!this.hub.take('hub', nowMs, tokens)) {
      throw new KithError(
        'rate-limited',
        `hub: more than ${this.limits.hubEventsPerSecond} events/s on this hub from everyone${counts}; ` +
          'try again shortly',
      )
    }
    if (!this.persons.take(person, nowMs, tokens)) {
      this.hub.refund('hub', tokens)
      throw new KithError(
        'rate-limited',
        `person: more than ${this.limits.eventsPerSecond} events/s from this person's keys ` +
          `together${counts}; slow down`,
      )
    }
    if (!stored) return undefined
    const p = this.pending.get(person)
    if (p === undefined) this.pending.set(person, { events: 1, bytes })
    else {
      p.events++
      p.bytes += bytes
    }
    return { person, bytes }
  }

  /** The reserved event was committed, found a duplicate, or failed: the store counts it now. */
  settle(r: Reservation): void {
    const p = this.pending.get(r.person)
    if (p === undefined) return
    p.events--
    p.bytes -= r.bytes
    if (p.events <= 0) this.pending.delete(r.person)
  }

  /** What `person` stores now, all their keys together, plus what is on its way to the store. */
  usageOf(person: string, now: number): Usage {
    const total = { ...(this.pending.get(person) ?? { events: 0, bytes: 0 }) }
    for (const key of this.keysOfPerson(person, now)) {
      const u = this.store.usageOf(key)
      total.events += u.events
      total.bytes += u.bytes
    }
    return total
  }

  private checkQuota(person: string, bytes: number, now: number): void {
    const { quotaEvents, quotaBytes } = this.limits
    const u = this.usageOf(person, now)
    if (u.events + 1 > quotaEvents) {
      throw new KithError(
        'rate-limited',
        `quota: this person stores ${u.events} events, their quota (quota_events_per_person ` +
          `${quotaEvents}); ask the hub's operator to raise it`,
      )
    }
    if (u.bytes + bytes > quotaBytes) {
      throw new KithError(
        'rate-limited',
        `quota: this person stores ${u.bytes} bytes and this event needs ${bytes} more, over ` +
          `their quota (quota_bytes_per_person ${quotaBytes}); ask the hub's operator to raise it`,
      )
    }
  }

  /**
   * The keys that stored something, grouped by person; rebuilt when the grants change or a key
   * stores its first event (a person's keys change rarely, their usage constantly).
   */
  private keysOfPerson(person: string, now: number): readonly string[] {
    const stamp = `${this.grants.generation}:${this.store.usageKeyCount}:${Math.floor(now / 60)}`
    if (stamp !== this.keysStamp) {
      const next = new Map<string, string[]>()
      for (const key of this.store.usageKeys()) {
        const p = personOf(this.grants, key, now) ?? key
        const list = next.get(p)
        if (list === undefined) next.set(p, [key])
        else list.push(key)
      }
      this.keysOf = next
      this.keysStamp = stamp
    }
    return this.keysOf.get(person) ?? []
  }
}
