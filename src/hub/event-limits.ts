import { KithError } from '../errors.js'
import type { NostrEvent } from '../events/event.js'
import { isEphemeralKind } from '../events/kinds.js'
import { personOf } from '../grants/members.js'
import type { GrantVerifier } from '../grants/verifier.js'
import { isIndexedTag, type EventStore, type Usage } from '../store/event-store.js'
import { quotaExemptKinds } from '../store/hub-schema.js'
import type { HubLimits } from './limits.js'
import { RateLimiter } from './rate-limiter.js'

/**
 * What an event's tag-index rows cost in rate tokens. Each one-letter tag is a row of the hub's
 * tag index (three B-tree inserts), and the rows of one event are inserted in one go on the main
 * thread: 1000 of them held it ~5–8 ms, longer than a member's whole EVENT→OK on an idle hub. At
 * 1 token an event, 100 events/s of 1000 `p` tags held the hub most of every second, and an
 * honest member's OK p99 rose to 2.3× idle even at 1 token per 10 tags (bench:abuse tag-flood).
 * So an event's first `freeIndexedTags` rows are free (what ordinary events carry), and each
 * `indexedTagsPerToken` more cost a token: a 1000-tag event is ~500 tokens, two a second per
 * person at most, and a person's bucket bounds the rows they make as well as their events.
 */
export const freeIndexedTags = 10
export const indexedTagsPerToken = 2

/** Tokens `event` takes from each rate bucket it pays into (see indexedTagsPerToken). */
export function eventTokens(event: NostrEvent): number {
  let indexed = 0
  for (const tag of event.tags) if (isIndexedTag(tag)) indexed++
  return 1 + Math.floor(Math.max(0, indexed - freeIndexedTags) / indexedTagsPerToken)
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
   * The refusal `take` would give `event` now for the hub's or its person's bucket, taking
   * nothing: asked before the signature check, so a person past their rate does not make the hub
   * parse and verify each event it then refuses (a flood of 1000-tag events cost ~0.7 ms each).
   * Taking nothing, a forged event naming someone else's key cannot spend their tokens. Authority
   * kinds are left to `take` (whether a revocation is held needs it parsed).
   */
  wouldRefuse(event: NostrEvent, now: number, nowMs: number): KithError | undefined {
    if (quotaExemptKinds.has(event.kind)) return undefined
    const tokens = eventTokens(event)
    if (!this.hub.has('hub', nowMs, tokens)) return this.hubRefusal(tokens)
    const person = personOf(this.grants, event.pubkey, now) ?? event.pubkey
    if (!this.persons.has(person, nowMs, tokens)) return this.personRefusal(tokens)
    return undefined
  }

  private counts(tokens: number): string {
    return tokens === 1
      ? ''
      : ` (this event counts ${tokens}: 1 + 1 per ${indexedTagsPerToken} tags past the first ${freeIndexedTags})`
  }

  private hubRefusal(tokens: number): KithError {
    return new KithError(
      'rate-limited',
      `hub: more than ${this.limits.hubEventsPerSecond} events/s on this hub from everyone${this.counts(tokens)}; ` +
        'try again shortly',
    )
  }

  private personRefusal(tokens: number): KithError {
    return new KithError(
      'rate-limited',
      `person: more than ${this.limits.eventsPerSecond} events/s from this person's keys ` +
        `together${this.counts(tokens)}; slow down`,
    )
  }

  /**
   * Admits `event` (already verified and authorized) or throws KithError('rate-limited') naming
   * the limit. For an event to be stored it returns the reservation to `settle` after the commit.
   */
  take(event: NostrEvent, raw: string, now: number, nowMs: number): Reservation | undefined {
    // A revocation that revokes nothing yet (held) is a person's ordinary storage: quota and
    // bucket. One that takes effect keeps the authority lane, so a key can be cut during a flood.
    const tokens = eventTokens(event)
    if (quotaExemptKinds.has(event.kind) && !this.grants.wouldHold(event)) {
      if (!this.keys.take(event.pubkey, nowMs, tokens)) {
        throw new KithError(
          'rate-limited',
          `key: more than ${this.limits.eventsPerSecond} grants, revocations and channel ` +
            `definitions/s from this key${this.counts(tokens)}; slow down`,
        )
      }
      return undefined
    }
    const person = personOf(this.grants, event.pubkey, now) ?? event.pubkey
    const stored = !isEphemeralKind(event.kind)
    const bytes = stored ? Buffer.byteLength(raw, 'utf8') : 0
    if (stored) this.checkQuota(person, bytes, now)
    if (!this.hub.take('hub', nowMs, tokens)) throw this.hubRefusal(tokens)
    if (!this.persons.take(person, nowMs, tokens)) {
      this.hub.refund('hub', tokens)
      throw this.personRefusal(tokens)
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
