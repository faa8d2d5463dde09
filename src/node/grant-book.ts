import { KithError } from '../errors.js'
import { publicKeyOf, signEvent, verifyEventSignature, type NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { makeGrant, signGrantProof, type GrantSpec, type Grant } from '../grants/grant.js'
import { parentGrant } from '../grants/issuer.js'
import { makeRevocation } from '../grants/revocation.js'
import type { GrantVerifier, Decision } from '../grants/verifier.js'
import { FleetState } from '../grants/fleet-state.js'
import type { EventStore } from '../store/event-store.js'
import { NodeReads } from '../store/node-reads.js'
import { NodeStore } from '../store/node-store.js'
import { profileNameOf } from '../grants/names.js'

/**
 * This node's copy of the fleet's grants and revocations (in KITH_HOME/node.db), with the same
 * verifier the hub runs. Everything it issues is checked by that verifier before it is stored or
 * published, so a node never sends a grant a hub would refuse.
 */
export class GrantBook {
  /** Grants, revocations and channel definitions: the same state and admission rule a hub has. */
  readonly state: FleetState
  readonly verifier: GrantVerifier
  private readonly reads: NodeReads
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
    this.state = new FleetState({ founder: fleet, verifySignature: verifyEventSignature })
    this.verifier = this.state.grants
    this.reads = new NodeReads(store)
    this.reload()
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

  /**
   * Adds grants and revocations learned from a hub or a pairing (a structural check; the
   * signature too unless `verified`); returns how many were new and accepted.
   */
  learn(events: readonly NostrEvent[], opts: { verified?: boolean } = {}): number {
    const fresh = events.filter((e) => e.kind === Kind.Grant || e.kind === Kind.Revocation)
    let accepted = 0
    const keep: NostrEvent[] = []
    const now = Math.floor(Date.now() / 1000)
    for (const e of fresh) {
      const before = this.verifier.generation
      const r = this.verifier.add(e, {
        keepPending: true,
        receivedAt: now,
        verified: opts.verified ?? false,
      })
      if (r.status === 'accepted' && this.verifier.generation !== before) accepted++
    }
    // Only what was placed (a pending one placed by a later one of the batch included).
    for (const e of fresh) if (this.verifier.holds(e.id)) keep.push(e)
    if (keep.length > 0) this.store.insertBatch(keep)
    return accepted
  }

  /** Stores admitted events that a hub would store (grants, revocations, definitions, …). */
  keep(events: readonly NostrEvent[]): ('stored' | 'duplicate' | 'superseded')[] {
    return this.store.insertBatch(events)
  }

  /**
   * Signs, checks (as a hub would, at `now`) and stores a grant. The subject's consent is its
   * `proof` (from pairing) or is made here from `subjectSecret` (this node's own device, a new
   * agent key). Throws KithError('restricted').
   */
  issueGrant(
    spec: Omit<GrantSpec, 'fleet' | 'proof'> & { proof?: string; subjectSecret?: Uint8Array },
    issuerSecret: Uint8Array,
    now: number,
  ): NostrEvent {
    return this.commit(this.signGrant(spec, issuerSecret, now), now)
  }

  /**
   * Signs a grant and checks it as `issueGrant` would (the issuer's authority now, the chain's
   * rules), without storing it. Pairing hands the grant over first and records it only once the
   * other side has confirmed receipt, so a pairing that fails leaves no grant behind.
   */
  signGrant(
    spec: Omit<GrantSpec, 'fleet' | 'proof'> & { proof?: string; subjectSecret?: Uint8Array },
    issuerSecret: Uint8Array,
    now: number,
  ): NostrEvent {
    const { subjectSecret, proof: given, ...rest } = spec
    // Below the founder every grant names the issuer's own current grant as its parent.
    const issuer = publicKeyOf(issuerSecret)
    const parent =
      rest.parent ?? parentGrant(issuer, this.fleet, (k) => this.currentGrant(k, now))?.id
    const proof =
      given ?? (subjectSecret === undefined ? '' : signGrantProof(subjectSecret, issuer, rest.role))
    const event = signEvent(
      makeGrant(
        { ...rest, proof, fleet: this.fleet, ...(parent === undefined ? {} : { parent }) },
        now,
      ),
      issuerSecret,
    )
    this.checkIssuer(event, now)
    // Judged on a scratch verifier holding only the issuer's chain: acceptance is structural
    // (kith-grants), so this is the answer the book (and a hub) will give when it is recorded.
    const scratch = new FleetState({ founder: this.fleet, verifySignature: verifyEventSignature })
    for (const e of this.chainEvents(issuer, now)) scratch.grants.add(e, { verified: true })
    const r = scratch.grants.add(event, { verified: true })
    if (r.status !== 'accepted') throw new KithError('restricted', `${r.code}: ${r.reason}`)
    return event
  }

  /** Stores a grant made by `signGrant`, checked again (the book may have changed since). */
  record(event: NostrEvent, now: number): NostrEvent {
    return this.commit(event, now)
  }

  /** A node refuses to sign with authority it no longer holds (an expired or revoked grant). */
  private checkIssuer(event: NostrEvent, now: number): void {
    const issuer = this.verifier.authorize(event.pubkey, { now, kind: event.kind })
    if (!issuer.ok) throw new KithError('restricted', `${issuer.code}: ${issuer.reason}`)
  }

  /**
   * Signs, checks and stores a revocation. Refused before anything is signed when the revoker
   * stands above none of a target's grants (it would revoke nothing anywhere).
   */
  issueRevocation(
    target: { grants?: string[]; keys?: string[]; reason?: string },
    revokerSecret: Uint8Array,
    now: number,
  ): NostrEvent {
    const revoker = publicKeyOf(revokerSecret)
    for (const id of target.grants ?? []) {
      if (!this.verifier.mayRevokeGrant(revoker, id)) {
        throw new KithError(
          'restricted',
          "no-authority: only the grant's issuer or an owner above it may revoke it",
          { reason: 'no-authority' },
        )
      }
    }
    for (const key of target.keys ?? []) {
      if (key !== this.fleet && this.verifier.grantsOf(key).length === 0) {
        throw new KithError(
          'not-found',
          'unknown-target: no grant of this key is known here (is the npub right? kith up syncs grants)',
          { reason: 'unknown-target' },
        )
      }
      if (key === this.fleet || !this.verifier.mayRevokeKey(revoker, key)) {
        throw new KithError(
          'restricted',
          "no-authority: only an issuer of, or an owner above, one of this key's grants may revoke it",
          { reason: 'no-authority' },
        )
      }
    }
    return this.commit(
      signEvent(makeRevocation({ ...target, fleet: this.fleet }, now), revokerSecret),
      now,
    )
  }

  private commit(event: NostrEvent, now: number): NostrEvent {
    // The verifier judges structure only; a node also refuses to sign with authority it no
    // longer holds (an expired or revoked issuer's grant would change nothing anywhere).
    this.checkIssuer(event, now)
    const r = this.verifier.add(event, { verified: true })
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
    return this.reads.event(id)
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

  /**
   * This fleet's accepted grants, parents before children, then its revocations: the order a
   * hub can take them in.
   */
  allEventsInChainOrder(): NostrEvent[] {
    const v = this.verifier
    const depth = (id: string) => v.positionOf(id)?.chain.length ?? 0
    const grants = v.allGrants().sort((a, b) => depth(a.id) - depth(b.id))
    const ids = [...grants.map((g) => g.id), ...v.allRevocations().map((r) => r.id)]
    return ids.flatMap((id) => {
      const e = this.event(id)
      return e === undefined ? [] : [e]
    })
  }

  /**
   * Re-reads node.db (another process may have added grants or definitions) into the state.
   * Everything in node.db was admitted on its way in; replay does not depend on order.
   */
  reload(): void {
    this.state.replay({
      authority: [
        ...this.store.eventsOfKind(Kind.Grant),
        ...this.store.eventsOfKind(Kind.Revocation),
      ],
      definitions: this.store.allVersionsOfKind(Kind.ChannelDefinition),
      firsts: this.store.earliestInChannels(),
      legacy: this.store.legacyVersionIds(Kind.ChannelDefinition),
      settings: [
        ...this.store.allVersionsOfKind(Kind.FleetSetting),
        ...this.store.eventsOfKind(Kind.FleetSetting),
      ],
    })
  }

  /** Stores an event this node signed and queues it for every hub (the daemon delivers it). */
  publishOwn(event: NostrEvent): void {
    if (this.queue) this.queue(event)
    else this.store.insertBatch([event])
  }

  /** The name `pubkey` gives itself in its newest kind-0 profile held here, if any. */
  profileName(pubkey: string): string | undefined {
    return profileNameOf(this.reads, pubkey)
  }

  /** The newest kind-0 profile `pubkey` signed that is held here. */
  profile(pubkey: string): NostrEvent | undefined {
    return this.reads.newest({ kinds: [Kind.Profile], authors: [pubkey] })
  }

  /** Members (by subject) right now, to diff before and after a revocation. */
  members(now: number): Set<string> {
    return new Set(this.verifier.subjects().filter((k) => this.verifier.isMember(k, now).ok))
  }

  close(): void {
    this.onClose()
  }
}

/**
 * The fleet's setting an enrollment carried, signed, with the grants above its author (kith-e2e/1,
 * "New devices"): kept in node.db, so the new node seals from its first message whatever its
 * hubs send. Signatures were checked by the pairing (JoinerHandshake).
 */
export function keepSealing(book: GrantBook, enrollment: { sealing?: NostrEvent[] }): void {
  const events = enrollment.sealing ?? []
  book.learn(
    events.filter((e) => e.kind === Kind.Grant),
    { verified: true },
  )
  book.keep(events.filter((e) => e.kind === Kind.FleetSetting))
}
