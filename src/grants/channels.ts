import { compareNewestFirst, type NostrEvent } from '../events/event.js'
import {
  channelsOfEvent,
  parseChannelDefinition,
  type ChannelDefinition,
} from '../events/channel-def.js'
import { Kind } from '../events/kinds.js'
import { KithError } from '../errors.js'
import { personsOf } from './members.js'
import type { GrantVerifier } from './verifier.js'

/** Stable reason codes of channel decisions (kith-channels/1); `malformed` is `invalid:`. */
export type ChannelCode =
  | 'malformed'
  | 'wrong-fleet'
  | 'not-an-owner'
  | 'no-authority'
  | 'creator-changed'
  | 'not-a-channel-member'

export type ChannelDecision = { ok: true } | { ok: false; code: ChannelCode; reason: string }

export type ChannelAddResult =
  | { status: 'accepted' }
  | { status: 'superseded' }
  | { status: 'rejected'; code: ChannelCode; reason: string }

const refuse = (code: ChannelCode, reason: string) => ({ ok: false as const, code, reason })

/** `restricted: <code>: <reason>`, or `invalid: malformed: …`, as the hub answers it. */
export function channelRefusal(d: { code: ChannelCode; reason: string }): KithError {
  return new KithError(d.code === 'malformed' ? 'invalid' : 'restricted', `${d.code}: ${d.reason}`)
}

/**
 * The channel definitions of one fleet and who may read and post in each channel. Pure: events
 * in, decisions out; membership of people is resolved through the fleet's GrantVerifier, so a
 * revoked key (or a key below a revoked grant) stops counting at once.
 */
export class ChannelBook {
  private readonly defs = new Map<string, ChannelDefinition>()
  private changes = 0
  private privateCount = 0

  constructor(readonly grants: GrantVerifier) {}

  /** Changes whenever a decision might: a definition or a grant/revocation was accepted. */
  get generation(): string {
    return `${this.changes}:${this.grants.generation}`
  }

  /**
   * Takes a definition. With `now` (a hub or a CLI checking what it is about to publish) the
   * author's authority is checked (kith-channels/1, "Who may define"); replaying stored history
   * passes no `now` and keeps the newest.
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
    const current = this.defs.get(def.channel)
    if (current?.id === def.id) return { status: 'accepted' }
    if (opts.now !== undefined) {
      const d = this.mayPublishDefinition(def, opts.now)
      if (!d.ok) return { status: 'rejected', code: d.code, reason: d.reason }
    }
    // Older than the one in effect (NIP-01 order): nothing changes, as for any replaceable event.
    if (current !== undefined && compareNewestFirst(toOrder(current), toOrder(def)) <= 0) {
      return { status: 'superseded' }
    }
    this.privateCount += (def.private ? 1 : 0) - (current?.private ? 1 : 0)
    this.defs.set(def.channel, def)
    this.changes++
    return { status: 'accepted' }
  }

  private mayPublishDefinition(def: ChannelDefinition, now: number): ChannelDecision {
    const auth = this.grants.authorize(def.author, {
      now,
      kind: Kind.ChannelDefinition,
      channel: def.channel,
    })
    if (!auth.ok)
      return refuse(auth.code === 'not-a-member' ? 'not-an-owner' : 'no-authority', auth.reason)
    if (!this.isPerson(def.author, now)) {
      return refuse(
        'not-an-owner',
        'channels are defined by owner (person) keys, not devices or agents',
      )
    }
    const current = this.defs.get(def.channel)
    if (current === undefined) {
      if (def.creator !== def.author) {
        return refuse('no-authority', "a channel's first definition names its author as creator")
      }
      return { ok: true }
    }
    // Authority first, so a stranger learns nothing about the channel's creator.
    if (!this.mayDefine(def.author, def.channel, now)) {
      return refuse(
        'no-authority',
        `only the founder, an admin or the channel's creator may change #${def.channel}`,
      )
    }
    if (def.creator !== current.creator) {
      return refuse(
        'creator-changed',
        `#${def.channel} has another creator; repeat the creator tag of the definition in effect`,
      )
    }
    return { ok: true }
  }

  /** The definition in effect, if any. */
  definition(channel: string): ChannelDefinition | undefined {
    return this.defs.get(channel)
  }

  definitions(): ChannelDefinition[] {
    return [...this.defs.values()].sort((a, b) => (a.channel < b.channel ? -1 : 1))
  }

  isPrivate(channel: string): boolean {
    return this.defs.get(channel)?.private === true
  }

  /** Cheap check for the hub's hot path: no private channel, nothing to filter. */
  get hasPrivate(): boolean {
    return this.privateCount > 0
  }

  privateChannels(): string[] {
    return [...this.defs.values()].filter((d) => d.private).map((d) => d.channel)
  }

  /** True when `key` is a person: the founder, or a member holding an owner grant. */
  isPerson(key: string, now: number): boolean {
    return this.grants
      .validChains(key, now)
      .some((c) => c.length === 0 || c.at(-1)!.role === 'owner')
  }

  /**
   * The people behind `key` right now: for each valid chain, the owner nearest to the key on it
   * (the key itself when it is an owner), or the founder when no owner is on it. Empty for a key
   * that is not a member.
   */
  personsOf(key: string, now: number): Set<string> {
    return personsOf(this.grants, key, now)
  }

  /** May `person` change this channel: the founder, an admin (owner grant with deleg), the creator. */
  private mayDefine(key: string, channel: string, now: number): boolean {
    if (key === this.grants.founder) return true
    if (this.defs.get(channel)?.creator === key) return true
    return this.grants
      .validChains(key, now)
      .some((c) => c.at(-1)?.role === 'owner' && c.at(-1)?.deleg === true)
  }

  /**
   * May `key` read and post in `channel` now? Open (or undefined) channels: yes. Private: when
   * the key itself, or the person behind it, is listed. Fleet membership is checked elsewhere.
   */
  isMember(key: string, channel: string, now: number): boolean {
    const def = this.defs.get(channel)
    if (def === undefined || !def.private) return true
    if (def.members.includes(key)) return true
    for (const p of this.personsOf(key, now)) if (def.members.includes(p)) return true
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
      if (!this.isPrivate(channel)) continue
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

  /** May the author post `event` (not a definition) in every channel it names? */
  mayPost(event: Pick<NostrEvent, 'kind' | 'tags' | 'pubkey'>, now: number): ChannelDecision {
    for (const channel of channelsOfEvent(event)) {
      if (!this.isMember(event.pubkey, channel, now)) {
        return refuse(
          'not-a-channel-member',
          `#${channel} is private and the author is not a member`,
        )
      }
    }
    return { ok: true }
  }
}

function toOrder(def: ChannelDefinition): { created_at: number; id: string } {
  return { created_at: def.createdAt, id: def.id }
}
