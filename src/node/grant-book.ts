import { KithError } from '../errors.js'
import { publicKeyOf, signEvent, verifyEventSignature, type NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { makeGrant, type GrantSpec, type Grant } from '../grants/grant.js'
import { makeRevocation } from '../grants/revocation.js'
import { GrantVerifier, type Decision } from '../grants/verifier.js'
import type { EventStore } from '../store/event-store.js'
import { NodeStore } from '../store/node-store.js'

/**
 * This node's copy of the fleet's grants and revocations (in KITH_HOME/node.db), with the same
 * verifier the hub runs. Everything it issues is checked by that verifier before it is stored or
 * published, so a node never sends a grant a hub would refuse.
 */
export class GrantBook {
  readonly verifier: GrantVerifier
  /**
   * `queue` stores an event this node issued and puts it in the outbox, so the daemon keeps
   * sending it to every hub until each answers (even when no hub was reachable when it was made).
   */
  constructor(
    private readonly store: EventStore,
    readonly fleet: string,
    private readonly onClose: () => void = () => undefined,
    private readonly queue?: (event: NostrEvent) => void,
  ) {
    this.verifier = new GrantVerifier({ founder: fleet, verifySignature: verifyEventSignature })
    for (const kind of [Kind.Grant, Kind.Revocation]) {
      for (const e of store.eventsOfKind(kind))
        this.verifier.add(e, { verified: true, keepPending: true })
    }
  }

  /** Opens node.db on its own (CLI commands); the daemon shares its NodeStore instead. */
  static open(home: string, fleet: string): GrantBook {
    const node = new NodeStore(home)
    return new GrantBook(
      node.events,
      fleet,
      () => node.close(),
      (e) => node.enqueue(e, Math.floor(Date.now() / 1000)),
    )
  }

  /** Adds events learned from a hub; returns how many were new and accepted. */
  learn(events: readonly NostrEvent[], opts: { verified?: boolean } = {}): number {
    const fresh = events.filter((e) => e.kind === Kind.Grant || e.kind === Kind.Revocation)
    let accepted = 0
    const keep: NostrEvent[] = []
    for (const e of fresh) {
      const before = this.verifier.generation
      const r = this.verifier.add(e, { keepPending: true, verified: opts.verified ?? false })
      if (r.status !== 'rejected') keep.push(e)
      if (r.status === 'accepted' && this.verifier.generation !== before) accepted++
    }
    if (keep.length > 0) this.store.insertBatch(keep)
    return accepted
  }

  /** Signs, checks (as a hub would, at `now`) and stores a grant. Throws KithError('restricted'). */
  issueGrant(spec: Omit<GrantSpec, 'fleet'>, issuerSecret: Uint8Array, now: number): NostrEvent {
    // Below the founder every grant names the issuer's own current grant as its parent.
    const issuer = publicKeyOf(issuerSecret)
    const parent =
      spec.parent ?? (issuer === this.fleet ? undefined : this.currentGrant(issuer, now)?.id)
    return this.commit(
      signEvent(
        makeGrant({ ...spec, fleet: this.fleet, ...(parent === undefined ? {} : { parent }) }, now),
        issuerSecret,
      ),
      now,
    )
  }

  issueRevocation(
    target: { grants?: string[]; keys?: string[]; reason?: string },
    revokerSecret: Uint8Array,
    now: number,
  ): NostrEvent {
    return this.commit(
      signEvent(makeRevocation({ ...target, fleet: this.fleet }, now), revokerSecret),
      now,
    )
  }

  private commit(event: NostrEvent, now: number): NostrEvent {
    const r = this.verifier.add(event, { verified: true, now })
    if (r.status !== 'accepted') {
      throw new KithError('restricted', `${r.code}: ${r.reason}`)
    }
    if (this.queue) this.queue(event)
    else this.store.insertBatch([event])
    return event
  }

  authorize(pubkey: string, now: number): Decision {
    return this.verifier.isMember(pubkey, now)
  }

  /** The newest valid grant of `pubkey`, for naming and for chaining grants beneath it. */
  currentGrant(pubkey: string, now: number): Grant | undefined {
    const d = this.verifier.isMember(pubkey, now)
    if (!d.ok) return undefined
    return d.chain[d.chain.length - 1]
  }

  /**
   * The events a hub needs to accept `pubkey`: every grant on its chain, founder first. A node
   * publishes this before it authenticates.
   */
  chainEvents(pubkey: string, now: number): NostrEvent[] {
    const d = this.verifier.isMember(pubkey, now)
    if (!d.ok) return []
    return d.chain.map((g) => this.event(g.id)).filter((e): e is NostrEvent => e !== undefined)
  }

  event(id: string): NostrEvent | undefined {
    const row = this.store.query([{ ids: [id] }], { defaultLimit: 1, maxLimit: 1 })[0]
    return row === undefined ? undefined : (JSON.parse(row.raw) as NostrEvent)
  }

  /** Every grant and revocation, oldest first (for publishing to a new hub). */
  allEvents(): NostrEvent[] {
    // node.db may still hold the grants of a fleet this machine left (kith fleet join moves a
    // person's first machine from their own fleet into another): those are never sent.
    const ours = (e: NostrEvent) => e.tags.some((t) => t[0] === 'fleet' && t[1] === this.fleet)
    return [
      ...this.store.eventsOfKind(Kind.Grant),
      ...this.store.eventsOfKind(Kind.Revocation),
    ].filter(ours)
  }

  /** Re-reads node.db (another process may have added grants) into the verifier. */
  reload(): void {
    for (const kind of [Kind.Grant, Kind.Revocation]) {
      for (const e of this.store.eventsOfKind(kind))
        this.verifier.add(e, { verified: true, keepPending: true })
    }
  }

  /** Members (by subject) right now, to diff before and after a revocation. */
  members(now: number): Set<string> {
    return new Set(this.verifier.subjects().filter((k) => this.verifier.isMember(k, now).ok))
  }

  close(): void {
    this.onClose()
  }
}
