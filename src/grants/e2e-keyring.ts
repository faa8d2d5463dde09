import { e2eError } from '../events/e2e-codes.js'
import { newEpoch, type Epoch } from '../events/e2e-epoch.js'
import { openEnvelope, parseEnvelopeHead } from '../events/e2e-envelope.js'
import { sealPlan, type EpochView, type SealPlan } from '../events/e2e-rotation.js'
import type { NostrEvent } from '../events/event.js'
import type { ChannelBook } from './channels.js'
import { e2eRecipients, historyShare, isE2eReader } from './e2e-recipients.js'
import type { GrantVerifier } from './verifier.js'

/**
 * Who holds one epoch, as far as this keyring knows. `holders`: every key an envelope that
 * counts went to (a claim by its signer): a removal among them rotates. `sure`: the keys known to
 * hold it (this device sent or opened it for them, or they signed an envelope of it): only these
 * are not sent it again, so another member's junk envelope cannot keep a key from anyone.
 */
export interface Holders {
  number: number
  holders: Set<string>
  sure: Set<string>
}

/** Where a keyring keeps epoch keys and who holds them: node.db on a node, memory in a browser. */
export interface KeyringStore {
  epoch(id: string): Epoch | undefined
  /** The epochs of `channel` whose keys are held. */
  epochsOf(channel: string): Epoch[]
  /**
   * Keeps an epoch's key; false when it was already held. An earlier `since` than the one kept
   * replaces it (the epoch began no later than its earliest envelope).
   */
  addEpoch(epoch: Epoch): boolean
  /** Every epoch of `channel` a counted envelope was seen for, with the keys that hold it. */
  holdersOf(channel: string): Map<string, Holders>
  addHolders(
    epochId: string,
    channel: string,
    number: number,
    keys: readonly string[],
    sure: boolean,
  ): void
}

/** What decides who may hold a channel's keys: the fleet's grants and channel definitions. */
export interface KeyringFleet {
  grants: GrantVerifier
  channels: ChannelBook
}

/**
 * kith-e2e/1's key rules, once, for the node (node/e2e-keys.ts), the web app and its service
 * worker (web/app/lib/e2e.ts): which envelopes give keys and count as holders, and which epoch to
 * seal under. `self` is the device asking (it always counts as a reader in its own view).
 */
export class Keyring {
  constructor(
    readonly store: KeyringStore,
    private readonly fleet: KeyringFleet,
    readonly self: string,
  ) {}

  /** May `key` read `channel` at `at` (fleet member and channel member)? */
  isReader(key: string, channel: string, at: number): boolean {
    const { grants, channels } = this.fleet
    return isE2eReader(grants, channels, key, channel, at, this.self)
  }

  /**
   * Takes an admitted envelope (kith-e2e/1, "Envelopes"). Only an envelope whose signer could
   * send it counts at all: the signer read the channel at its date (else `not-a-member`). One
   * addressed to a key `secretFor` knows is opened, and counts only when it opens (a junk
   * envelope to this device does not make it a holder, so the next sender sends the real key).
   * Holders counted: the signer (it holds what it sent) and the recipient when it read the
   * channel then (a claim that a non-member holds a key would force a rotation on every send).
   * Returns the epoch opened, with `fresh` when its key was new here; throws the refusal.
   */
  takeEnvelope(
    e: NostrEvent,
    secretFor: (recipient: string) => Uint8Array | undefined,
  ): { epoch: Epoch; fresh: boolean } | undefined {
    const head = parseEnvelopeHead(e)
    if (!this.isReader(e.pubkey, head.channel, e.created_at))
      throw e2eError('not-a-member', `its signer was not a member of #${head.channel}`)
    const secret = secretFor(head.recipient)
    let opened: { epoch: Epoch; fresh: boolean } | undefined
    if (secret !== undefined) {
      const epoch = { ...openEnvelope(e, secret), since: e.created_at }
      opened = { epoch, fresh: this.store.addEpoch(epoch) }
    }
    this.store.addHolders(head.epochId, head.channel, head.number, [e.pubkey], true)
    if (this.isReader(head.recipient, head.channel, e.created_at))
      this.store.addHolders(
        head.epochId,
        head.channel,
        head.number,
        [head.recipient],
        opened !== undefined,
      )
    return opened
  }

  /**
   * The epoch to seal under in `channel` now, and the keys to send it to first (kith-e2e/1,
   * Rotation): a new or rotated epoch is made and kept; the keys `to` are noted as holders (the
   * caller signs their envelopes before the sealed event).
   */
  epochFor(
    channel: string,
    now: number,
    random: (n: number) => Uint8Array,
    /** Periodic rotation (kith-e2e/1): the fleet setting's period, in seconds. */
    rotateEvery?: number,
  ): { epoch: Epoch; to: readonly string[]; plan: SealPlan } {
    const { grants, channels } = this.fleet
    const members = e2eRecipients(grants, channels, channel, now, this.self)
    const held = new Map(this.store.epochsOf(channel).map((e) => [e.id, e]))
    const seen = this.store.holdersOf(channel)
    const views: EpochView[] = [...held.values()].map((e) => ({
      id: e.id,
      number: e.number,
      holders: seen.get(e.id)?.holders ?? new Set(),
      sure: seen.get(e.id)?.sure ?? new Set(),
      ...(e.since === undefined ? {} : { since: e.since }),
    }))
    const plan = sealPlan(
      views,
      members,
      (k) => this.isReader(k, channel, now),
      // A key that may read no history (an agent a device granted) is never handed an epoch
      // that sealed messages from before it arrived: it joins by a rotation.
      (k) => historyShare(grants, k, now) === 'none',
      rotateEvery === undefined ? undefined : { now, every: rotateEvery },
    )
    let epoch: Epoch
    let to: readonly string[]
    if (plan.action === 'use') {
      epoch = held.get(plan.epochId)!
      to = plan.missing
    } else {
      epoch = { ...newEpoch(channel, plan.number, random), since: now }
      this.store.addEpoch(epoch)
      to = members
    }
    if (to.length > 0) this.store.addHolders(epoch.id, channel, epoch.number, to, true)
    return { epoch, to, plan }
  }
}

/** A keyring's store held in memory (the web app and its service worker rebuild it on load). */
export class MemoryKeyringStore implements KeyringStore {
  private readonly keys = new Map<string, Epoch>()
  private readonly seen = new Map<string, Map<string, Holders>>()

  epoch(id: string): Epoch | undefined {
    return this.keys.get(id)
  }

  epochsOf(channel: string): Epoch[] {
    return [...this.keys.values()].filter((k) => k.channel === channel)
  }

  addEpoch(epoch: Epoch): boolean {
    const held = this.keys.get(epoch.id)
    if (held !== undefined) {
      if (epoch.since !== undefined && (held.since === undefined || epoch.since < held.since))
        this.keys.set(epoch.id, { ...held, since: epoch.since })
      return false
    }
    this.keys.set(epoch.id, epoch)
    return true
  }

  holdersOf(channel: string): Map<string, Holders> {
    return this.seen.get(channel) ?? new Map<string, Holders>()
  }

  addHolders(
    epochId: string,
    channel: string,
    number: number,
    keys: readonly string[],
    sure: boolean,
  ): void {
    let byEpoch = this.seen.get(channel)
    if (byEpoch === undefined) this.seen.set(channel, (byEpoch = new Map<string, Holders>()))
    let entry = byEpoch.get(epochId)
    if (entry === undefined)
      byEpoch.set(epochId, (entry = { number, holders: new Set(), sure: new Set() }))
    for (const k of keys) {
      entry.holders.add(k)
      if (sure) entry.sure.add(k)
    }
  }
}
