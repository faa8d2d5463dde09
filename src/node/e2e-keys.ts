import { isKithError } from '../errors.js'
import { currentEpoch, type Epoch } from '../events/e2e-epoch.js'
import { makeEnvelope } from '../events/e2e-envelope.js'
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
import { Keyring } from '../grants/e2e-keyring.js'
import { historyShare } from '../grants/e2e-recipients.js'
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
    ...store.reads.events({ kinds: [Kind.FleetSetting], tags: { d: [e2eSettingD] }, limit: 1_000 }),
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

  private readonly keyring: Keyring

  constructor(private readonly ctx: E2eContext) {
    this.keyring = new Keyring(ctx.store.e2e, ctx.book.state, ctx.id.devicePubkey)
  }

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
    const { epoch, to, plan } = this.keyring.epochFor(
      channel,
      this.ctx.now(),
      random,
      this.sealing().rotateEvery,
    )
    this.keys.delete(epoch.id)
    if (plan.action === 'rotate')
      this.ctx.log(
        plan.aged === true
          ? `#${channel}: new epoch ${plan.number} (the last one was older than the fleet's rotation period)`
          : `#${channel}: new epoch ${plan.number} (${plan.removed.length} key(s) no longer members, ` +
              `${plan.joined.length} new key(s) that may read no history)`,
      )
    this.signEnvelopes(epoch, to)
    return epoch
  }

  private isMember(key: string, channel: string, now: number): boolean {
    return this.keyring.isReader(key, channel, now)
  }

  /** Queues envelopes of `epoch` to `to` (already noted as its holders). */
  private signEnvelopes(epoch: Epoch, to: readonly string[]): void {
    const { id, store, fleet } = this.ctx
    const now = this.ctx.now()
    for (const p of to)
      store.enqueue(
        signEvent(makeEnvelope(epoch, p, id.deviceSecret, fleet, now), id.deviceSecret),
        now,
      )
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
    const { id } = this.ctx
    try {
      const taken = this.keyring.takeEnvelope(e, (recipient) =>
        recipient === id.devicePubkey ? id.deviceSecret : this.ctx.agentSecret(recipient),
      )
      if (taken === undefined) return
      if (taken.fresh) this.fresh.push(taken.epoch.id)
      this.keys.delete(taken.epoch.id)
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
        const sealed = store.reads.event(id)
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
        const holders = seen.get(epoch.id)?.sure
        const to = [...own]
          .filter(([, share]) => share === 'all' || epoch === current)
          .map(([k]) => k)
          .filter((k) => !(holders?.has(k) ?? false) && this.isMember(k, channel, now))
        if (to.length === 0) continue
        store.e2e.addHolders(epoch.id, epoch.channel, epoch.number, to, true)
        this.signEnvelopes(epoch, to)
      }
    }
  }
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}
