import { compareNewestFirst, type NostrEvent } from '../events/event.js'
import {
  channelsOfEvent,
  parseChannelDefinition,
  type ChannelDefinition,
} from '../events/channel-def.js'
import { Kind } from '../events/kinds.js'
import { KithError } from '../errors.js'
import { mayAct, type Action, type ActorClass } from './authority.js'
import { actionOf, fleetActor, positionActor } from './event-authority.js'
import { personsOf } from './members.js'
import { grantSkewSeconds, type GrantVerifier } from './verifier.js'

/**
 * How far a definition's `created_at` may run ahead of the clock that judges it, and ahead of
 * its author's own owner grant. Small, because a definition dated ahead would win newest-wins
 * against every correction made before its date (kith-channels, "Which definitions count").
 */
export const definitionSkewSeconds = 60

/** Stable reason codes of channel decisions (kith-channels/1); see `channelCodePrefix`. */
export type ChannelCode =
  | 'malformed'
  | 'wrong-fleet'
  | 'future-dated'
  | 'not-an-owner'
  | 'no-authority'
  | 'creator-changed'
  | 'channel-not-allowed'

export type ChannelDecision = { ok: true } | { ok: false; code: ChannelCode; reason: string }

/**
 * `accepted`: kept, and it is the definition in effect. `superseded`: kept (a hub stores it) but
 * a newer definition of the channel is in effect. `rejected`: not kept.
 */
export type ChannelAddResult =
  | { status: 'accepted' }
  | { status: 'superseded' }
  | { status: 'rejected'; code: ChannelCode; reason: string }

type Refusal = { ok: false; code: ChannelCode; reason: string }
const refuse = (code: ChannelCode, reason: string): Refusal => ({ ok: false, code, reason })

/**
 * The refusal a key gets for a channel it may not use, whatever the reason: its grant's channel
 * caps exclude it, or it is private and the key is not a member (or may not see its definition).
 * One text for both, so a refusal does not confirm that a private channel exists; it is exactly
 * the grant verifier's `channel-not-allowed` refusal.
 */
export function channelNotAllowed(channel: string): Refusal {
  return refuse('channel-not-allowed', `channel #${channel} is not allowed for this key`)
}

/** `invalid:` for what is wrong with the event itself; `restricted:` for everything else. */
export function channelCodePrefix(code: ChannelCode): 'invalid' | 'restricted' {
  return code === 'malformed' || code === 'future-dated' ? 'invalid' : 'restricted'
}

/** `restricted: <code>: <reason>`, or `invalid: <code>: …`, as the hub answers it. */
export function channelRefusal(d: { code: ChannelCode; reason: string }): KithError {
  return new KithError(channelCodePrefix(d.code), `${d.code}: ${d.reason}`)
}

/** Whether a definition's author held a person's authority when it was made, and which. */
type Standing = { ok: true; authority: boolean } | Refusal

/** What a channel's definitions amount to at one time (kith-channels, "Which definition…"). */
export interface ChannelState {
  /** The definition in effect; undefined: the channel is open (no definition counts). */
  definition: ChannelDefinition | undefined
  /** The creator: named by the newest authority definition, else the first plain definer. */
  creator: string | undefined
  /** True when an authority (the founder or an admin) named the creator. */
  namedByAuthority: boolean
  /** Ids of the definitions that may be in effect: the newest of them is. */
  eligible: ReadonlySet<string>
}

interface CachedState {
  stamp: string
  /** The state holds for `now` in [from, until): which definitions are dated ahead changes. */
  from: number
  until: number
  state: ChannelState
}

const openState: ChannelState = {
  definition: undefined,
  creator: undefined,
  namedByAuthority: false,
  eligible: new Set(),
}

/**
 * The channel definitions of one fleet and who may read and post in each channel. Pure: events
 * in, decisions out. It holds a *set* (every well-formed definition of this fleet it was given,
 * the revocations and the earliest event of each key in each channel) and works out, at the
 * time asked, which definition is in effect; so every book that holds the same events answers
 * the same, whatever order they came in. Membership of people is resolved through the fleet's
 * GrantVerifier, so a revoked key (or a key below a revoked grant) stops counting at once.
 */
export class ChannelBook {
  /** Every kept definition, by channel, by id. */
  private readonly defs = new Map<string, Map<string, ChannelDefinition>>()
  /** Earliest `created_at` of an event in each channel (`h`), per author key. */
  private readonly earliest = new Map<string, Map<string, number>>()
  /**
   * Definitions a store held before it kept every version: their earlier versions are lost, so
   * "in use before" is not asked of them (they were admitted by the rules of their time).
   */
  private readonly legacy = new Set<string>()
  private readonly states = new Map<string, CachedState>()
  private standings = new Map<string, Standing>()
  private standingsStamp = ''
  private changes = 0
  private privateDefs = 0

  constructor(readonly grants: GrantVerifier) {}

  /** Changes whenever a decision might: definitions, noted events, grants or revocations. */
  get generation(): string {
    return `${this.changes}:${this.grants.generation}`
  }

  /**
   * Takes a definition. Without `now` (replaying what this hub or node stored): kept when it is a
   * well-formed definition of this fleet, judged later like every other. With `now` (a hub or
   * node taking it in, a CLI checking what it is about to publish): admitted as kith-channels
   * "Admission" says, and kept only when admitted.
   */
  add(event: NostrEvent, opts: { now?: number } = {}): ChannelAddResult {
    let def: ChannelDefinition
    try {
      def = parseChannelDefinition(event)
    } catch (err) {
      if (!(err instanceof KithError)) throw err
      return {
        status: 'rejected',
        code: 'malformed',
        reason: err.message.replace(/^malformed: /, ''),
      }
    }
    if (def.fleet !== this.grants.founder) {
      return { status: 'rejected', code: 'wrong-fleet', reason: 'definition is for another fleet' }
    }
    const now = opts.now
    if (now === undefined || this.defs.get(def.channel)?.has(def.id) === true) {
      this.keep(def)
      if (now === undefined) return { status: 'accepted' }
      return this.state(def.channel, now).definition?.id === def.id
        ? { status: 'accepted' }
        : { status: 'superseded' }
    }
    const d = this.admit(def, now)
    if (!d.ok) return { status: 'rejected', code: d.code, reason: d.reason }
    return this.state(def.channel, now).definition?.id === def.id
      ? { status: 'accepted' }
      : { status: 'superseded' }
  }

  /**
   * Rebuilds the book from what a hub or node stored (start-up), in any order: every version of
   * every definition (EventStore.allVersionsOfKind) and the earliest event of
   * each key in each channel (EventStore.earliestInChannels). Grants go to the verifier first.
   */
  replay(input: {
    definitions: Iterable<NostrEvent>
    firsts: Iterable<{ channel: string; pubkey: string; createdAt: number }>
    /** Definitions stored before every version was kept (EventStore.legacyVersionIds). */
    legacy?: Iterable<string>
  }): void {
    for (const id of input.legacy ?? []) this.legacy.add(id)
    this.changes++
    for (const f of input.firsts) this.noteEarliest(f.channel, f.pubkey, f.createdAt)
    for (const e of input.definitions) this.add(e)
  }

  /** Admission at `now`: refuses, or keeps the definition. */
  private admit(def: ChannelDefinition, now: number): ChannelDecision {
    if (def.createdAt > now + definitionSkewSeconds) {
      return refuse(
        'future-dated',
        `a channel definition may be dated at most ${definitionSkewSeconds} s ahead; check the clock`,
      )
    }
    const standing = this.standing(def)
    if (!standing.ok) return standing
    // What the author can see of the channel as it stands decides what a refusal may say.
    const before = this.state(def.channel, now)
    const hidden =
      before.definition?.private === true && !this.maySeeDefinition(def.author, def.channel, now)
    this.keep(def)
    const after = this.state(def.channel, now)
    if (after.eligible.has(def.id)) return { ok: true }
    this.drop(def)
    if (hidden) return channelNotAllowed(def.channel)
    if (def.author === after.creator && def.creator !== def.author) {
      return refuse(
        'creator-changed',
        `only the founder or an admin may name another creator of #${def.channel}`,
      )
    }
    if (def.author === after.creator && this.leavesOut(def).length > 0) {
      return refuse(
        'no-authority',
        `#${def.channel} is already used by people this definition leaves out: only the founder or an admin may define it so`,
      )
    }
    if (after.creator === undefined) {
      return def.creator !== def.author
        ? refuse('no-authority', "a channel's first definition names its author as creator")
        : refuse(
            'no-authority',
            `#${def.channel} is already in use by others: only the founder or an admin may define it`,
          )
    }
    return refuse(
      'no-authority',
      `only the founder, an admin or the channel's creator may change #${def.channel}`,
    )
  }

  private keep(def: ChannelDefinition): void {
    let byId = this.defs.get(def.channel)
    if (byId === undefined) {
      byId = new Map()
      this.defs.set(def.channel, byId)
    }
    if (byId.has(def.id)) return
    byId.set(def.id, def)
    if (def.private) this.privateDefs++
    this.changes++
  }

  private drop(def: ChannelDefinition): void {
    const byId = this.defs.get(def.channel)
    if (byId?.delete(def.id) !== true) return
    if (byId.size === 0) this.defs.delete(def.channel)
    if (def.private) this.privateDefs--
    this.changes++
  }

  /**
   * Takes note of an event this hub or node stored: an event with `h` tags is the evidence that a
   * channel is in use (a plain owner may not define a channel another person used before). Call
   * it for every stored event. (Revocations date themselves: GrantVerifier.revokedAt.)
   */
  noteEvent(event: NostrEvent): void {
    for (const t of event.tags) {
      if (t[0] === 'h' && t[1] !== undefined)
        this.noteEarliest(t[1], event.pubkey, event.created_at)
    }
  }

  /** One row of the store's "earliest event per (channel, key)" answer (start-up replay). */
  noteEarliest(channel: string, pubkey: string, createdAt: number): void {
    let byKey = this.earliest.get(channel)
    if (byKey === undefined) {
      byKey = new Map()
      this.earliest.set(channel, byKey)
    }
    const prev = byKey.get(pubkey)
    if (prev !== undefined && prev <= createdAt) return
    byKey.set(pubkey, createdAt)
    // A new user of a defined channel changes which private definitions leave someone out.
    if (prev === undefined && this.defs.has(channel)) {
      this.changes++
      return
    }
    // Only a definition dated at or after this event can be blocked by it.
    for (const d of this.defs.get(channel)?.values() ?? []) {
      if (d.createdAt >= createdAt) {
        this.changes++
        return
      }
    }
  }

  /**
   * Did the author hold a person's authority when the definition was made (its `created_at`)?
   * The founder always; otherwise an owner grant of the author, structurally valid, dated no
   * later than the definition (+ skew), inside its window then, whose caps allow kind 34140 in
   * this channel, and that no revocation dated at or before the definition had ended. Authority
   * (`deleg`) when such a grant is an admin's.
   */
  private standing(def: ChannelDefinition): Standing {
    const stamp = this.generation
    if (stamp !== this.standingsStamp) {
      this.standings = new Map()
      this.standingsStamp = stamp
    }
    const cached = this.standings.get(def.id)
    if (cached !== undefined) return cached
    const s = this.standingUncached(def)
    this.standings.set(def.id, s)
    return s
  }

  private standingUncached(def: ChannelDefinition): Standing {
    return this.standingAt(
      def.author,
      def.createdAt,
      Kind.ChannelDefinition,
      def.channel,
      'channel.define.in-use',
    )
  }

  /**
   * Was `key` the founder or an admin at `at`, for an event of `kind` that applies fleet-wide
   * (the encryption setting, kith-e2e/1)? Judged as a definition's author is: by the grants and
   * revocations dated at or before `at`, so a later removal does not undo what it signed then.
   * An owner grant limited to some channels decides nothing fleet-wide.
   */
  hadAuthority(key: string, at: number, kind: number): boolean {
    const action = actionOf({ kind, tags: [], content: '' })
    const s = this.standingAt(key, at, kind, undefined, action)
    return s.ok && s.authority
  }

  private standingAt(
    author: string,
    t: number,
    kind: number,
    channel: string | undefined,
    /** The row whose allowing makes the author an authority here (the table decides who). */
    authorityAction: Action,
  ): Standing {
    // Who is who is the authority table's: a person may define (channel.define), and whoever
    // `authorityAction` allows counts as an authority (over others' use, fleet-wide).
    const judged = (classes: ActorClass[]): Standing =>
      mayAct('channel.define', classes)
        ? { ok: true, authority: mayAct(authorityAction, classes) }
        : refuse('no-authority', 'the authority table does not let this key define a channel')
    if (author === this.grants.founder)
      return judged(positionActor({ role: 'founder', deleg: true }))
    const owners = this.grants.grantsOf(author).filter((e) => e.grant.role === 'owner')
    if (owners.length === 0) {
      return refuse(
        'not-an-owner',
        'channels are defined by people (owner keys), not by devices, agents or outsiders',
      )
    }
    let found: Standing | undefined
    let best: Refusal | undefined
    for (const eff of owners) {
      let failure: Refusal | undefined
      if (eff.grant.createdAt > t + definitionSkewSeconds) {
        failure = refuse('no-authority', 'the definition is dated before its author was admitted')
      } else if (
        (eff.nbf !== undefined && t < eff.nbf - grantSkewSeconds) ||
        (eff.exp !== undefined && t > eff.exp + grantSkewSeconds)
      ) {
        failure = refuse('no-authority', "the definition is dated outside its author's grant")
      } else if (eff.kinds !== undefined && !eff.kinds.has(kind)) {
        failure = refuse('no-authority', `kind ${kind} is not allowed for this key`)
      } else if (
        eff.channels !== undefined &&
        (channel === undefined || !eff.channels.has(channel))
      ) {
        failure = channelNotAllowed(channel ?? '*')
      } else {
        const ended = this.grants.revokedAt(eff.grant.id)
        if (ended !== undefined && ended <= t) {
          failure = refuse('no-authority', "the definition is dated after its author's removal")
        }
      }
      if (failure === undefined) {
        const s = judged(positionActor(eff.grant))
        if (s.ok && s.authority) return s
        found ??= s
      } else if (best === undefined || rankOf(failure) > rankOf(best)) {
        best = failure
      }
    }
    return found ?? best!
  }

  /**
   * True when a key of another person posted in the definition's channel no later than it was
   * made (the same second counts: who was first is unknown): the channel was in use, so it is
   * not a plain owner's to create.
   */
  private inUseBefore(def: ChannelDefinition): boolean {
    if (this.legacy.has(def.id)) return false
    for (const [key, at] of this.earliest.get(def.channel) ?? []) {
      if (at > def.createdAt || key === def.author) continue
      const persons = this.structuralPersons(key)
      if (persons.size > 0 && !persons.has(def.author)) return true
    }
    return false
  }

  /**
   * The keys of other people who used the definition's channel, at any date, that it leaves out
   * (private, and neither the key nor one of its persons listed). A plain definition that leaves
   * out someone who already posted is not eligible (kith-channels, "Creator and the definition in
   * effect"): a date is its signer's word, so a definition back-dated before their first message
   * must not lock them out of the channel and its history; only an authority may.
   */
  private leavesOut(def: ChannelDefinition): string[] {
    if (!def.private || this.legacy.has(def.id)) return []
    const out: string[] = []
    for (const key of this.earliest.get(def.channel)?.keys() ?? []) {
      if (key === def.author || def.members.includes(key)) continue
      const persons = this.structuralPersons(key)
      if (persons.size === 0 || persons.has(def.author)) continue
      if (![...persons].some((p) => def.members.includes(p))) out.push(key)
    }
    return out
  }

  /**
   * The people a key belongs to by its grants alone (revoked or not): what it was when it
   * posted, which is what "in use by another person" asks.
   */
  private structuralPersons(key: string): Set<string> {
    if (key === this.grants.founder) return new Set([key])
    const persons = new Set<string>()
    for (const eff of this.grants.grantsOf(key)) {
      persons.add(eff.chain.findLast((g) => g.role === 'owner')?.subject ?? this.grants.founder)
    }
    return persons
  }

  /** The channel's definitions worked out at `now` (kith-channels, "Which definition…"). */
  state(channel: string, now: number): ChannelState {
    const byId = this.defs.get(channel)
    if (byId === undefined) return openState
    const stamp = this.generation
    const cached = this.states.get(channel)
    if (cached?.stamp === stamp && cached.from <= now && now < cached.until) return cached.state
    let from = -Infinity
    let until = Infinity
    const counting: { def: ChannelDefinition; authority: boolean }[] = []
    for (const def of byId.values()) {
      const countsFrom = def.createdAt - definitionSkewSeconds
      if (countsFrom > now) {
        until = Math.min(until, countsFrom)
        continue
      }
      from = Math.max(from, countsFrom)
      const s = this.standing(def)
      if (s.ok) counting.push({ def, authority: s.authority })
    }
    const authorities = counting.filter((c) => c.authority).map((c) => c.def)
    let creator: string | undefined
    if (authorities.length > 0) {
      creator = newest(authorities)!.creator
    } else {
      creator = counting
        .map((c) => c.def)
        .filter((d) => d.creator === d.author && !this.inUseBefore(d))
        .sort((a, b) => compareNewestFirst(toOrder(b), toOrder(a)))[0]?.author
    }
    const eligible = counting
      .filter(
        (c) =>
          c.authority ||
          (c.def.author === creator &&
            c.def.creator === creator &&
            this.leavesOut(c.def).length === 0),
      )
      .map((c) => c.def)
    const state: ChannelState = {
      definition: newest(eligible),
      creator,
      namedByAuthority: authorities.length > 0,
      eligible: new Set(eligible.map((d) => d.id)),
    }
    this.states.set(channel, { stamp, from, until, state })
    return state
  }

  /** The definition in effect at `now`, if any. */
  definition(channel: string, now: number): ChannelDefinition | undefined {
    return this.state(channel, now).definition
  }

  /** Every definition in effect at `now`, by channel name. */
  definitions(now: number): ChannelDefinition[] {
    return [...this.defs.keys()]
      .sort()
      .map((c) => this.definition(c, now))
      .filter((d): d is ChannelDefinition => d !== undefined)
  }

  isPrivate(channel: string, now: number): boolean {
    return this.state(channel, now).definition?.private === true
  }

  /** Cheap check for the hub's hot path: no private definition kept, nothing to filter. */
  get hasPrivate(): boolean {
    return this.privateDefs > 0
  }

  privateChannels(now: number): string[] {
    return [...this.defs.keys()].filter((c) => this.isPrivate(c, now))
  }

  /** True when `key` is a person: the founder, or a member holding an owner grant. */
  isPerson(key: string, now: number): boolean {
    return this.grants
      .validChains(key, now)
      .some((c) => c.length === 0 || c.at(-1)!.role === 'owner')
  }

  /**
   * True when the authority table lets `key` take `action` now by its fleet standing alone: for
   * a channel others use, or a fleet setting, the founder or a valid admin (owner with deleg).
   */
  isAuthority(key: string, now: number, action: Action = 'channel.define.in-use'): boolean {
    return mayAct(action, fleetActor(this.grants, key, now))
  }

  /**
   * The people behind `key` right now: for each valid chain, the owner nearest to the key on it
   * (the key itself when it is an owner), or the founder when no owner is on it. Empty for a key
   * that is not a member. `signedAt`: as at that date, for history (see `isMember`).
   */
  personsOf(key: string, now: number, signedAt?: number): Set<string> {
    return personsOf(this.grants, key, now, signedAt)
  }

  /** May `person` change this channel now: the founder, an admin, the creator. */
  mayDefine(person: string, channel: string, now: number): boolean {
    if (this.isAuthority(person, now)) return true
    return this.state(channel, now).creator === person && this.isPerson(person, now)
  }

  /**
   * May `key` read and post in `channel` now? Open (or undefined) channels: yes. Private: when
   * the key itself, or the person behind it, is listed. Fleet membership is checked elsewhere.
   * `signedAt` (history, readers only): the person behind a since-revoked key is the one it
   * stood under at that date, so what a revoked device said in its person's channel while it
   * stood stays that person's history (kith-channels, "Removal").
   */
  isMember(key: string, channel: string, now: number, signedAt?: number): boolean {
    const def = this.state(channel, now).definition
    if (def === undefined || !def.private) return true
    if (def.members.includes(key)) return true
    // A hub key (founder-admitted) replicates every channel to its peers.
    const d = this.grants.authorize(key, { now, ...(signedAt === undefined ? {} : { signedAt }) })
    if (d.ok && d.role === 'hub') return true
    for (const p of this.personsOf(key, now, signedAt)) if (def.members.includes(p)) return true
    return false
  }

  /** May `key` see the definition of `channel`: its members and whoever may change it. */
  maySeeDefinition(key: string, channel: string, now: number): boolean {
    if (this.isMember(key, channel, now)) return true
    for (const p of this.personsOf(key, now)) if (this.mayDefine(p, channel, now)) return true
    return false
  }

  /**
   * Is `event` deliverable to a connection that proved `keys`? Every private channel it belongs
   * to must admit one of the keys (a definition: to see it; anything else: as a member).
   */
  mayReceive(
    keys: Iterable<string>,
    event: Pick<NostrEvent, 'kind' | 'tags'>,
    now: number,
  ): boolean {
    const isDef = event.kind === Kind.ChannelDefinition
    for (const channel of channelsOfEvent(event)) {
      if (!this.isPrivate(channel, now)) continue
      let admitted = false
      for (const key of keys) {
        admitted = isDef
          ? this.maySeeDefinition(key, channel, now)
          : this.isMember(key, channel, now)
        if (admitted) break
      }
      if (!admitted) return false
    }
    return true
  }

  /**
   * May the author post `event` (not a definition) in every channel it names? A non-member of a
   * private channel gets the grant verifier's own `channel-not-allowed` refusal, word for word.
   * `signedAt`: history (see `isMember`); `now` is then the event's date too.
   */
  mayPost(
    event: Pick<NostrEvent, 'kind' | 'tags' | 'pubkey'>,
    now: number,
    signedAt?: number,
  ): ChannelDecision {
    for (const channel of channelsOfEvent(event)) {
      if (!this.isMember(event.pubkey, channel, now, signedAt)) return channelNotAllowed(channel)
    }
    return { ok: true }
  }
}

/** Refusals ranked by how much they tell, as the grant verifier ranks them: caps first. */
function rankOf(r: Refusal): number {
  return r.code === 'channel-not-allowed' ? 2 : r.code === 'no-authority' ? 1 : 0
}

function toOrder(def: ChannelDefinition): { created_at: number; id: string } {
  return { created_at: def.createdAt, id: def.id }
}

/** The newest in NIP-01 order: larger created_at; on a tie the lower id. */
function newest(defs: readonly ChannelDefinition[]): ChannelDefinition | undefined {
  let best: ChannelDefinition | undefined
  for (const d of defs) {
    if (best === undefined || compareNewestFirst(toOrder(d), toOrder(best)) < 0) best = d
  }
  return best
}
