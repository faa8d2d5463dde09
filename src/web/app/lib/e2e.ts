import {
  fleetSealing,
  isKithError,
  isSealed,
  Keyring,
  Kind,
  makeEnvelope,
  MemoryKeyringStore,
  openSealed,
  sealedEpochId,
  sealedKinds,
  sealTemplate,
  fitForSealing,
  signEvent,
  tagValue,
  type EventTemplate,
  type FleetState,
  type NostrEvent,
  type Sealing,
} from '../../../browser-core.js'

const now = () => Math.floor(Date.now() / 1000)
const random = (n: number) => crypto.getRandomValues(new Uint8Array(n))

/**
 * This browser's side of kith-e2e/1, as a node's (node/e2e-keys.ts), over the same Keyring but
 * held in memory: the keys come back on every load from the envelopes kept in IndexedDB with the
 * rest of the events. `take` reads settings and envelopes, `open` opens sealed events (or keeps
 * them waiting for their key), `seal` seals what this device sends, with the envelopes to send
 * first.
 */
export class WebKeys {
  private readonly store = new MemoryKeyringStore()
  private readonly keyring: Keyring
  /** Sealed events waiting for their epoch's key. */
  private readonly waiting = new Map<string, NostrEvent[]>()
  private readonly settings = new Map<string, NostrEvent>()

  constructor(
    private readonly me: string,
    private readonly secret: Uint8Array,
    private readonly fleet: string,
    /** The fleet's state these keys judge by (a service worker's sends need its channels too). */
    readonly state: FleetState,
  ) {
    this.keyring = new Keyring(this.store, state, me)
  }

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
      const taken = this.keyring.takeEnvelope(e, (p) => (p === this.me ? this.secret : undefined))
      if (taken === undefined) return []
      const opened: NostrEvent[] = []
      for (const w of this.waiting.get(taken.epoch.id) ?? []) {
        const o = this.open(w)
        if (o !== undefined) opened.push(o)
      }
      this.waiting.delete(taken.epoch.id)
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
      return openSealed(e, (id) => this.store.epoch(id))
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
    const { epoch, to } = this.keyring.epochFor(channel, t, random, this.sealing().rotateEvery)
    const before = to.map((p) =>
      signEvent(makeEnvelope(epoch, p, this.secret, this.fleet, t), this.secret),
    )
    const fitted = fitForSealing(template, this.me)
    return { before, event: signEvent(sealTemplate(fitted, this.me, epoch), this.secret) }
  }
}
