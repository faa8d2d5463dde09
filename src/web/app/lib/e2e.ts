import {
  e2eError,
  e2eRecipients,
  fitForSealing,
  fleetSealing,
  historyShare,
  isE2eReader,
  isKithError,
  isSealed,
  Kind,
  makeEnvelope,
  newEpoch,
  openEnvelope,
  openSealed,
  parseEnvelopeHead,
  sealedEpochId,
  sealedKinds,
  sealPlan,
  sealTemplate,
  signEvent,
  tagValue,
  type Epoch,
  type EventTemplate,
  type FleetState,
  type NostrEvent,
  type Sealing,
} from '../../../browser-core.js'

const now = () => Math.floor(Date.now() / 1000)
const random = (n: number) => crypto.getRandomValues(new Uint8Array(n))

/**
 * This browser's side of kith-e2e/1, as a node's (node/e2e-keys.ts) but held in memory: the keys
 * come back on every load from the envelopes kept in IndexedDB with the rest of the events.
 * `take` reads settings and envelopes, `open` opens sealed events (or keeps them waiting for their
 * key), `seal` seals what this device sends, with the envelopes to send first.
 */
export class WebKeys {
  private readonly keys = new Map<string, Epoch>()
  /** Per channel: every epoch an envelope was seen for, and who it went to. */
  private readonly holders = new Map<
    string,
    Map<string, { number: number; holders: Set<string> }>
  >()
  /** Sealed events waiting for their epoch's key. */
  private readonly waiting = new Map<string, NostrEvent[]>()
  private readonly settings = new Map<string, NostrEvent>()

  constructor(
    private readonly me: string,
    private readonly secret: Uint8Array,
    private readonly fleet: string,
    private readonly state: FleetState,
  ) {}

  /** Whether the fleet seals its channels (kith-e2e/1, "Turning it on"). */
  encrypts(): boolean {
    return this.sealing().on
  }

  /** The fleet's sealing with why, by the one rule node and service worker share. */
  sealing(): Sealing {
    return fleetSealing(this.settings.values(), this.state.channels, this.fleet, now())
  }

  /** An admitted setting or envelope; returns the events its key opened (they waited for it). */
  take(e: NostrEvent): NostrEvent[] {
    if (e.kind === Kind.FleetSetting) this.settings.set(e.id, e)
    if (e.kind !== Kind.KeyEnvelope) return []
    try {
      const head = parseEnvelopeHead(e)
      // The signer holds the key it sent: its removal must rotate, even if no envelope went to it.
      this.noteHolders(head.channel, head.epochId, head.number, [head.recipient, e.pubkey])
      if (head.recipient !== this.me || this.keys.has(head.epochId)) return []
      const epoch = openEnvelope(e, this.secret)
      if (
        !isE2eReader(this.state.grants, this.state.channels, e.pubkey, epoch.channel, e.created_at)
      )
        throw e2eError('not-a-member', `its signer was not a member of #${epoch.channel}`)
      this.keys.set(epoch.id, epoch)
      const opened: NostrEvent[] = []
      for (const w of this.waiting.get(epoch.id) ?? []) {
        const o = this.open(w)
        if (o !== undefined) opened.push(o)
      }
      this.waiting.delete(epoch.id)
      return opened
    } catch (err) {
      // A refused envelope gives no key; the events it would open stay sealed (not shown).
      console.warn(`kith: refused key envelope ${e.id.slice(0, 12)}…: ${String(err)}`)
      return []
    }
  }

  /** A sealed event opened; undefined while its key has not come, or when it is refused. */
  open(e: NostrEvent): NostrEvent | undefined {
    if (!isSealed(e)) return e
    try {
      return openSealed(e, (id) => this.keys.get(id))
    } catch (err) {
      if (isKithError(err) && err.reason === 'no-key') {
        const id = sealedEpochId(e) ?? ''
        this.waiting.set(id, [...(this.waiting.get(id) ?? []), e])
      } else console.warn(`kith: kept sealed ${e.id.slice(0, 12)}…: ${String(err)}`)
      return undefined
    }
  }

  /** Whether `template` is sealed when sent: a channel event of a sealed kind, fleet sealing. */
  seals(template: EventTemplate): boolean {
    return (
      sealedKinds.has(template.kind) && tagValue(template, 'h') !== undefined && this.encrypts()
    )
  }

  /**
   * Seals and signs `template` (kith-e2e/1, Rotation: create, rotate or use the channel's
   * epoch): the envelopes to send before it, then the sealed event.
   */
  seal(template: EventTemplate): { before: NostrEvent[]; event: NostrEvent } {
    const channel = tagValue(template, 'h')!
    const t = now()
    const { grants, channels } = this.state
    const members = e2eRecipients(grants, channels, channel, t, this.me)
    const seen = this.holders.get(channel)
    const views = [...this.keys.values()]
      .filter((k) => k.channel === channel)
      .map((k) => ({
        id: k.id,
        number: k.number,
        holders: seen?.get(k.id)?.holders ?? new Set<string>(),
      }))
    const plan = sealPlan(
      views,
      members,
      (k) => isE2eReader(grants, channels, k, channel, t, this.me),
      (k) => historyShare(grants, k, t) === 'none',
    )
    let epoch: Epoch
    let to: readonly string[]
    if (plan.action === 'use') {
      epoch = this.keys.get(plan.epochId)!
      to = plan.missing
    } else {
      epoch = newEpoch(channel, plan.number, random)
      this.keys.set(epoch.id, epoch)
      to = members
    }
    const before = to.map((p) =>
      signEvent(makeEnvelope(epoch, p, this.secret, this.fleet, t), this.secret),
    )
    this.noteHolders(channel, epoch.id, epoch.number, to)
    const fitted = fitForSealing(template, this.me)
    return { before, event: signEvent(sealTemplate(fitted, this.me, epoch), this.secret) }
  }

  private noteHolders(channel: string, epochId: string, number: number, keys: readonly string[]) {
    let byEpoch = this.holders.get(channel)
    if (byEpoch === undefined)
      this.holders.set(
        channel,
        (byEpoch = new Map<string, { number: number; holders: Set<string> }>()),
      )
    let entry = byEpoch.get(epochId)
    if (entry === undefined) byEpoch.set(epochId, (entry = { number, holders: new Set() }))
    for (const k of keys) entry.holders.add(k)
  }
}
