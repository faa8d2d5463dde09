import { channelsOfEvent } from '../events/channel-def.js'
import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import type { ChannelBook } from '../grants/channels.js'
import type { HideRule } from '../store/event-store.js'

const noneHidden: readonly HideRule[] = Object.freeze([])

/**
 * What one connection may read of the fleet's private channels (kith-channels): live events are
 * checked one by one, stored results are filtered inside the query. Decisions are cached until
 * the grants, the channel definitions, the connection's keys or the second change.
 */
export class ChannelGate {
  /** Made on first use: a hub without private channels never needs it. */
  private cache: Map<string, boolean> | undefined
  /** `hidden`'s answer, one object while the stamp holds. */
  private hiddenRules: readonly HideRule[] | undefined
  private stamp = ''

  constructor(
    private readonly channels: ChannelBook,
    /** The keys the connection proved (NIP-42), live: revoked ones are removed from it. */
    private readonly keys: ReadonlySet<string>,
  ) {}

  /** May the connection receive `event`? */
  mayReceive(event: NostrEvent, now: number): boolean {
    if (!this.channels.hasPrivate) return true
    this.refresh(now)
    const cache = (this.cache ??= new Map<string, boolean>())
    const isDef = event.kind === Kind.ChannelDefinition
    const key = `${isDef ? 'd' : 'h'}:${channelsOfEvent(event).join(',')}`
    let ok = cache.get(key)
    if (ok === undefined) {
      ok = this.channels.mayReceive(this.keys, event, now)
      cache.set(key, ok)
    }
    return ok
  }

  /**
   * What a REQ's stored results must leave out: the private channels it may not read. The same
   * object while its inputs are unchanged, so a streaming REQ keeps the pages it read under it
   * (`StoredStream.step`).
   */
  hidden(now: number): readonly HideRule[] {
    if (!this.channels.hasPrivate) return noneHidden
    this.refresh(now)
    return (this.hiddenRules ??= this.hiddenNow(now))
  }

  /**
   * Forgets both answers when what they depend on changed. Keys are only added by AUTH (the size
   * changes) and removed after a revocation (the grants' generation changes).
   */
  private refresh(now: number): void {
    const stamp = `${this.channels.generation}:${now}:${this.keys.size}`
    if (stamp === this.stamp) return
    this.cache?.clear()
    this.hiddenRules = undefined
    this.stamp = stamp
  }

  private hiddenNow(now: number): HideRule[] {
    const keys = [...this.keys]
    const messages: string[] = []
    const definitions: string[] = []
    for (const channel of this.channels.privateChannels(now)) {
      if (!keys.some((k) => this.channels.isMember(k, channel, now))) messages.push(channel)
      if (!keys.some((k) => this.channels.maySeeDefinition(k, channel, now))) {
        definitions.push(channel)
      }
    }
    return [
      { tag: 'h', values: messages },
      { kind: Kind.ChannelDefinition, tag: 'd', values: definitions },
    ]
  }
}
