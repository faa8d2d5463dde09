import { isKithError } from '../errors.js'
import { e2eError } from '../events/e2e-codes.js'
import { currentEpoch, newEpoch, type Epoch } from '../events/e2e-epoch.js'
import { makeEnvelope, openEnvelope, parseEnvelopeHead } from '../events/e2e-envelope.js'
import { sealPlan, type EpochView } from '../events/e2e-rotation.js'
import {
  isSealed,
  openSealed,
  sealedEpochId,
  sealedKinds,
  sealTemplate,
  fitForSealing,
} from '../events/e2e-seal.js'
import { e2eSettingD } from '../events/e2e-setting.js'
import {
  publicKeyOf,
  signEvent,
  tagValue,
  type EventTemplate,
  type NostrEvent,
} from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { e2eRecipients, historyShare, isE2eReader } from '../grants/e2e-recipients.js'
import { fleetSealing, type Sealing } from '../grants/e2e-sealing.js'
import { personOf } from '../grants/members.js'
import type { Identity } from '../identity/keys.js'
import type { NodeStore } from '../store/node-store.js'
import type { GrantBook } from './grant-book.js'
import { nip44DecryptNative } from './nip44-native.js'

/** Sealed forms kept between signing and the outbox; more means they were signed and dropped. */
const maxWaitingWires = 1_000

const random = (n: number) => crypto.getRandomValues(new Uint8Array(n))

/**
 * The fleet's sealing as the settings in node.db say (kith-e2e/1 "Turning it on", decided by
 * grants/e2e-sealing). Also what the CLI asks without a running node (`kith fleet encrypt`,
 * `kith status`).
 */
export function fleetSealingHere(
  store: NodeStore,
  book: GrantBook,
  fleet: string,
  now: number,
): Sealing {
  return fleetSealing(storedSettings(store), book.state.channels, fleet, now)
}

/** Whether the fleet seals its channels, as the settings in node.db say. */
export function fleetSealsHere(store: NodeStore, book: GrantBook, fleet: string): boolean {
  return fleetSealingHere(store, book, fleet, Math.floor(Date.now() / 1000)).on
}

/** Every version of every setting kept here, and the newest of each author (kept before versions were). */
function storedSettings(store: NodeStore): NostrEvent[] {
  return [
    ...store.events.allVersionsOfKind(Kind.FleetSetting),
    ...store.events
      .query([{ kinds: [Kind.FleetSetting], tags: { d: [e2eSettingD] } }], {
        defaultLimit: 1_000,
        maxLimit: 1_000,
      })
      .map((r) => JSON.parse(r.raw) as NostrEvent),
  ]
}

export interface E2eContext {
  id: Identity
  fleet: string
  store: NodeStore
  book: GrantBook
  /** The secret key of an agent hosted here (envelopes addressed to it are opened for it). */
  agentSecret: (pubkey: string) => Uint8Array | undefined
  now: () => number
  log: (line: string) => void
}

/**
 * The node's side of kith-e2e/1: whether the fleet encrypts, the epoch keys this node holds,
 * sealing what this node signs into a channel (`sign`, with the envelopes and rotations that
 * must go first) and opening what intake admitted (`open`, then `reopen` for events whose key
 * came later). The two boundaries are the node's signing of channel events and intake's hand-off
 * to chat, agents and control; the outbox sends the sealed form (`wireOf`), node.db keeps the
 * opened one.
 */
export class E2eKeys {
  private readonly wires = new Map<string, NostrEvent>()
  /** The decision, and the state of grants and settings it was made with. */
  private setting: { stamp: string; sealing: Sealing } | undefined
  /** Epochs whose keys arrived since the last `reopen`. */
  private fresh: string[] = []
  /** Keys by epoch id, as read from node.db (a catch-up opens thousands under a few keys). */
  private readonly keys = new Map<string, Epoch | undefined>()
  private readonly keyOf = (id: string): Epoch | undefined => {
    if (!this.keys.has(id)) this.keys.set(id, this.ctx.store.e2e.epoch(id))
    return this.keys.get(id)
  }

  constructor(private readonly ctx: E2eContext) {}

  /** Whether the fleet seals its channels (kith fleet encrypt), as its settings here say. */
  encrypts(): boolean {
    return this.sealing().on
  }

  /** The fleet's sealing with why (kith status); read again when grants or settings change. */
  sealing(): Sealing {
    const { store, book, fleet } = this.ctx
    // Standing is judged at each setting's date: a grant or revocation that arrives later can
    // change which settings count.
    const stamp = book.state.channels.generation
    if (this.setting?.stamp !== stamp)
      this.setting = { stamp, sealing: fleetSealingHere(store, book, fleet, this.ctx.now()) }
    return this.setting.sealing
  }

  /** A fleet setting may have changed (kith fleet encrypt): read the settings again. */
  settingChanged(): void {
    this.setting = undefined
  }

  /**
   * Signs `template` with `secret`, sealed when the fleet encrypts and it is a channel event of
   * a sealed kind: returns the event as made (opened) under the sealed event's id and signature,
   * and keeps the sealed form for the outbox. Envelopes the channel needs first (a new or rotated
   * epoch, keys that lack the current one) are queued before it.
   */
  sign(template: EventTemplate, secret: Uint8Array): NostrEvent {
    const channel = tagValue(template, 'h')
    if (!sealedKinds.has(template.kind) || channel === undefined || !this.encrypts())
      return signEvent(template, secret)
    const epoch = this.epochFor(channel)
    const author = publicKeyOf(secret)
    template = fitForSealing(template, author)
    const wire = signEvent(sealTemplate(template, author, epoch, undefined, secret), secret)
    if (this.wires.size >= maxWaitingWires) this.wires.delete(this.wires.keys().next().value!)
    this.wires.set(wire.id, wire)
    return { ...wire, tags: template.tags, content: template.content }
  }

  /** The sealed form of an event `sign` made (taken once, by the outbox). */
  wireOf(event: NostrEvent): NostrEvent | undefined {
    const wire = this.wires.get(event.id)
    this.wires.delete(event.id)
    return wire
  }

  /** The epoch to seal under now, after queueing what must go before (kith-e2e/1, Rotation). */
  private epochFor(channel: string): Epoch {
    const now = this.ctx.now()
    const members = this.recipients(channel, now)
    const held = new Map(this.ctx.store.e2e.epochsOf(channel).map((e) => [e.id, e]))
    const seen = this.ctx.store.e2e.holdersOf(channel)
    const views: EpochView[] = [...held.values()].map((e) => ({
      id: e.id,
      number: e.number,
      holders: seen.get(e.id)?.holders ?? new Set(),
    }))
    const plan = sealPlan(
      views,
      members,
      (k) => this.isMember(k, channel, now),
      (k) => historyShare(this.ctx.book.verifier, k, now) === 'none',
    )
    if (plan.action === 'use') {
      const epoch = held.get(plan.epochId)!
      this.sendEnvelopes(epoch, plan.missing)
      return epoch
    }
    const epoch = newEpoch(channel, plan.number, random)
    this.ctx.store.e2e.addEpoch(epoch)
    this.keys.delete(epoch.id)
    if (plan.action === 'rotate')
      this.ctx.log(
        `#${channel}: new epoch ${plan.number} (${plan.removed.length} key(s) no longer members, ` +
          `${plan.joined.length} new key(s) that may read no history)`,
      )
    this.sendEnvelopes(epoch, members)
    return epoch
  }

  /** The keys an epoch of `channel` goes to: member devices and agents (not people, not hubs). */
  private recipients(channel: string, now: number): string[] {
    const { book, id } = this.ctx
    return e2eRecipients(book.verifier, book.state.channels, channel, now, id.devicePubkey)
  }

  private isMember(key: string, channel: string, now: number): boolean {
    const { book, id } = this.ctx
    return isE2eReader(book.verifier, book.state.channels, key, channel, now, id.devicePubkey)
  }

  private sendEnvelopes(epoch: Epoch, to: readonly string[]): void {
    if (to.length === 0) return
    const { id, store, fleet } = this.ctx
    const now = this.ctx.now()
    for (const p of to)
      store.enqueue(
        signEvent(makeEnvelope(epoch, p, id.deviceSecret, fleet, now), id.deviceSecret),
        now,
      )
    store.e2e.addHolders(epoch.id, epoch.channel, epoch.number, to)
  }

  /**
   * Intake's hand-off: envelopes first (every one's recipient is noted; those to this device or
   * an agent hosted here are opened, their keys kept), then every sealed event opened where its
   * key is held. An event that cannot be opened stays sealed, as it came: `no-key` until its
   * key arrives (`reopen`), any other refusal logged with its reason, never shown.
   */
  open(events: readonly NostrEvent[]): NostrEvent[] {
    const { store } = this.ctx
    for (const e of events) {
      if (e.kind === Kind.FleetSetting) this.setting = undefined
      if (e.kind === Kind.KeyEnvelope) this.takeEnvelope(e)
    }
    return events.map((e) => {
      if (!isSealed(e)) return e
      try {
        return openSealed(e, this.keyOf, nip44DecryptNative)
      } catch (err) {
        if (isKithError(err) && err.reason === 'no-key') {
          store.e2e.markSealed(e.id, sealedEpochId(e) ?? '')
        } else {
          this.ctx.log(`kept sealed ${e.id.slice(0, 12)}…: ${errText(err)}`)
        }
        return e
      }
    })
  }

  private takeEnvelope(e: NostrEvent): void {
    const { store, id } = this.ctx
    try {
      const head = parseEnvelopeHead(e)
      // The signer holds the key it sent: its removal must rotate, even if no envelope went to it.
      store.e2e.addHolders(head.epochId, head.channel, head.number, [head.recipient, e.pubkey])
      const secret =
        head.recipient === id.devicePubkey ? id.deviceSecret : this.ctx.agentSecret(head.recipient)
      if (secret === undefined) return
      const epoch = openEnvelope(e, secret)
      // Keys come only from those who may read the channel when they handed them out.
      if (!this.isMember(e.pubkey, head.channel, e.created_at))
        throw e2eError('not-a-member', `its signer was not a member of #${head.channel}`)
      if (store.e2e.addEpoch(epoch)) this.fresh.push(epoch.id)
      this.keys.delete(epoch.id)
    } catch (err) {
      this.ctx.log(`refused key envelope ${e.id.slice(0, 12)}…: ${errText(err)}`)
    }
  }

  /**
   * Opens the stored events that waited for the keys `open` just took, replacing them in node.db;
   * returns them (to be shown, and handed to agents when fresh).
   */
  reopen(): NostrEvent[] {
    const { store } = this.ctx
    const out: NostrEvent[] = []
    for (const epochId of this.fresh.splice(0)) {
      for (const id of store.e2e.sealedFor(epochId)) {
        const sealed = store.events.getEvent(id)
        if (sealed === undefined) continue
        try {
          const opened = openSealed(sealed, this.keyOf, nip44DecryptNative)
          store.e2e.replaceOpened(opened)
          out.push(opened)
        } catch (err) {
          this.ctx.log(`kept sealed ${id.slice(0, 12)}…: ${errText(err)}`)
        }
      }
    }
    return out
  }

  /**
   * History follows the person (kith-e2e/1, "New members and new devices"): each device of this
   * node's own person is sent every epoch held here that it may read and lacks; each agent a
   * person key granted, the current epoch only; an agent a device granted, nothing (it joins at
   * a new epoch, Rotation). Run when grants change (a device was paired) and when a link comes up.
   */
  shareHistory(): void {
    const { store, book, id } = this.ctx
    const now = this.ctx.now()
    const me = personOf(book.verifier, id.devicePubkey, now)
    if (me === undefined) return
    const own = new Map<string, 'all' | 'current'>()
    for (const g of book.verifier.allGrants()) {
      if (g.role !== 'device' && g.role !== 'agent') continue
      if (g.subject === id.devicePubkey || own.has(g.subject)) continue
      if (personOf(book.verifier, g.subject, now) !== me) continue
      const share = historyShare(book.verifier, g.subject, now)
      if (share !== 'none') own.set(g.subject, share)
    }
    if (own.size === 0) return
    for (const channel of store.e2e.channelsHeld()) {
      const seen = store.e2e.holdersOf(channel)
      const epochs = store.e2e.epochsOf(channel)
      const current = currentEpoch(epochs)
      for (const epoch of epochs) {
        const holders = seen.get(epoch.id)?.holders
        const lacking = [...own]
          .filter(([, share]) => share === 'all' || epoch === current)
          .map(([k]) => k)
          .filter((k) => !(holders?.has(k) ?? false) && this.isMember(k, channel, now))
        this.sendEnvelopes(epoch, lacking)
      }
    }
  }
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
