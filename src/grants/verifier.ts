import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { mayAct } from './authority.js'
import { extendChain, founderRoot, type Effective } from './chain.js'
import { positionActor } from './event-authority.js'
import type { GrantCode } from './codes.js'
import { GrantError, parseGrant, type Grant, type Role } from './grant.js'
import { parseRevocation, type Revocation } from './revocation.js'

export type { Effective } from './chain.js'

/** How far a grant's nbf/exp may be from the verifier's clock. */
export const grantSkewSeconds = 300
export const defaultMaxDepth = 6

export type Decision =
  | { ok: true; role: Role | 'founder'; chain: readonly Grant[] }
  | { ok: false; code: GrantCode; reason: string }

export type AddResult =
  /** `held`: a revocation that revokes nothing known yet; it applies when its target arrives. */
  | { status: 'accepted'; held?: boolean }
  | { status: 'pending'; code: GrantCode; reason: string }
  | { status: 'rejected'; code: GrantCode; reason: string }

export interface VerifierOptions {
  /** The fleet's founder: the pinned root of every chain. */
  founder: string
  maxDepth?: number
  skewSeconds?: number
  /** Checks id and signature; the hub passes its fast verifier, tests the pure-JS one. */
  verifySignature: (event: NostrEvent) => boolean
  /** Targets one signer's held revocations may name in all (default heldTargetsPerSigner). */
  heldTargetsPerSigner?: number
  /** Grants and revocations kept waiting at once (default maxPending). */
  maxPending?: number
  /** How long one waits, in seconds of `receivedAt` (default pendingMaxAgeSeconds). */
  pendingMaxAgeSeconds?: number
}

/**
 * Grants waiting for their parent and revocations for their signer's grant (nodes syncing out of
 * order) kept at once; past it the oldest goes. Anyone who can write to a relay a node links to
 * can send them, so they are bounded in number and in age; a dropped one comes back with the
 * next fetch of the fleet's authority, and is placed once what it needs is there.
 */
export const maxPending = 1000
export const pendingMaxAgeSeconds = 24 * 3600

/**
 * Targets (`e` and `p` values) one signer's held revocations may name, all together. A held one
 * revokes nothing yet, so this is what a member can make every verifier keep for nothing; an
 * owner revoking keys ahead of their grants needs a handful.
 */
export const heldTargetsPerSigner = 1000

type Refusal = { ok: false; code: GrantCode; reason: string }
const refuse = (code: GrantCode, reason: string): Refusal => ({ ok: false, code, reason })

/** Refusals ranked by how much they tell: caps over window over revocation. */
const rank: Partial<Record<GrantCode, number>> = {
  revoked: 1,
  expired: 2,
  'not-yet-valid': 2,
  'kind-not-allowed': 3,
  'channel-not-allowed': 3,
}

/**
 * The one verifier of grant chains and revocations, used by hubs and nodes alike. Pure: events
 * in, decisions out. What it holds is a function of the *set* of events it was given, never of
 * their order or of the clock (kith-grants, "Acceptance"): grants are accepted on structure
 * alone, every well-formed revocation is kept, and a revocation's effect is worked out per grant
 * from the positions above it. Only decisions (`authorize`) take a time.
 */
export class GrantVerifier {
  readonly founder: string
  private readonly maxDepth: number
  private readonly skew: number
  private readonly verifySignature: (event: NostrEvent) => boolean
  private readonly grants = new Map<string, Grant>()
  private readonly bySubject = new Map<string, string[]>()
  private readonly revocations = new Map<string, Revocation>()
  /**
   * Target (grant id or key) → signer → the earliest `created_at` of that signer's revocations
   * naming it. Authority is a signer's, so a decision looks at each signer once, however many
   * revocations it published naming the same target.
   */
  private readonly revokesGrant = new Map<string, Map<string, number>>()
  private readonly revokesKey = new Map<string, Map<string, number>>()
  /** Targets named by each signer's held revocations, bounded by maxHeldTargets. */
  private readonly heldTargets = new Map<string, number>()
  private readonly maxHeldTargets: number
  /** Waiting for the parent or signer they need (nodes syncing out of order), oldest first. */
  private readonly pending = new Map<string, { event: NostrEvent; receivedAt: number }>()
  private readonly maxPending: number
  private readonly pendingMaxAge: number
  /** Pending events accepted since the last `drainPromoted` (recorded with recordAccepted). */
  private promoted: NostrEvent[] = []
  /** Structural positions; immutable, since a grant's parents are immutable events. */
  private readonly effective = new Map<string, Effective>()
  /** Whether each grant is revoked (itself or above); cleared when a revocation arrives. */
  private readonly dead = new Map<string, boolean>()
  /** When each grant's authority ended (see revokedAt); cleared when a revocation arrives. */
  private readonly ended = new Map<string, number | null>()
  private readonly bySubjectCache = new Map<string, Effective[]>()
  /** Ids accepted since the last `drainAccepted`, in acceptance order (parents first). */
  private accepted: string[] = []
  /** Set by nodes, which re-publish what they learn; a hub never drains, so it never records. */
  recordAccepted = false
  /** Bumped on every change; lets callers cache decisions. */
  generation = 0
  /**
   * Revocations parsed, by event: a hub asks `wouldHold` (its quota) and then `add` of the same
   * event, and a revocation's targets are the costly part to parse.
   */
  private readonly parsedRevocations = new WeakMap<NostrEvent, Revocation | GrantError>()

  constructor(opts: VerifierOptions) {
    this.founder = opts.founder
    this.maxDepth = opts.maxDepth ?? defaultMaxDepth
    this.skew = opts.skewSeconds ?? grantSkewSeconds
    this.verifySignature = opts.verifySignature
    this.maxHeldTargets = opts.heldTargetsPerSigner ?? heldTargetsPerSigner
    this.maxPending = opts.maxPending ?? maxPending
    this.pendingMaxAge = opts.pendingMaxAgeSeconds ?? pendingMaxAgeSeconds
  }

  /**
   * Adds a grant (4140) or revocation (4141) after checking its structure. `verified` skips the
   * signature check for events the caller has already verified. `keepPending` holds a grant whose
   * parent is not known yet and retries it as grants arrive; otherwise it is refused
   * `unknown-parent` (a hub answers so; the publisher sends the chain founder-first). Held ones
   * are bounded (maxPending, oldest out) and age out `pendingMaxAgeSeconds` after `receivedAt`
   * (seconds; a replay passes none and counts as received long ago).
   */
  add(
    event: NostrEvent,
    opts: { verified?: boolean; keepPending?: boolean; receivedAt?: number } = {},
  ): AddResult {
    if (this.grants.has(event.id) || this.revocations.has(event.id)) return { status: 'accepted' }
    if (!opts.verified && !this.verifySignature(event)) {
      return { status: 'rejected', code: 'bad-signature', reason: 'bad signature' }
    }
    const result = this.tryAdd(event)
    if (result.status === 'pending') {
      if (!opts.keepPending) return { status: 'rejected', code: result.code, reason: result.reason }
      this.keepPending(event, opts.receivedAt)
    }
    if (result.status === 'accepted') {
      if (this.recordAccepted) this.accepted.push(event.id)
      // Retry what waited for it only after it is recorded, so parents come before children.
      if (event.kind === Kind.Grant) this.retryPending()
    }
    return result
  }

  private tryAdd(event: NostrEvent): AddResult {
    try {
      if (event.kind === Kind.Grant) return this.addGrant(parseGrant(event))
      if (event.kind === Kind.Revocation) return this.addRevocation(this.revocationOf(event))
      return { status: 'rejected', code: 'malformed', reason: 'not a grant or revocation' }
    } catch (err) {
      if (err instanceof GrantError)
        return { status: 'rejected', code: err.reason, reason: err.message }
      throw err
    }
  }

  private keepPending(event: NostrEvent, receivedAt: number | undefined): void {
    if (receivedAt !== undefined) {
      // Oldest first: stop at the first one still young enough.
      for (const [id, p] of this.pending) {
        if (p.receivedAt >= receivedAt - this.pendingMaxAge) break
        this.pending.delete(id)
      }
    }
    this.pending.delete(event.id)
    while (this.pending.size >= this.maxPending) {
      this.pending.delete(this.pending.keys().next().value!)
    }
    this.pending.set(event.id, { event, receivedAt: receivedAt ?? 0 })
  }

  private retryPending(): void {
    let progress = true
    while (progress && this.pending.size > 0) {
      progress = false
      for (const [id, { event }] of this.pending) {
        const r = this.tryAdd(event)
        if (r.status === 'pending') continue
        this.pending.delete(id)
        if (r.status === 'accepted') {
          progress = true
          if (this.recordAccepted) {
            this.accepted.push(id)
            this.promoted.push(event)
          }
        }
      }
    }
  }

  /**
   * Events that waited (pending) and were accepted since the last call: a node stores them now,
   * since it keeps nothing it cannot place.
   */
  drainPromoted(): NostrEvent[] {
    const out = this.promoted
    this.promoted = []
    return out
  }

  /** Whether `id` is an accepted grant or a kept revocation. */
  holds(id: string): boolean {
    return this.grants.has(id) || this.revocations.has(id)
  }

  private addGrant(grant: Grant): AddResult {
    const result = this.resolveNew(grant)
    if (result instanceof GrantError) {
      const status = result.reason === 'unknown-parent' ? 'pending' : 'rejected'
      return { status, code: result.reason, reason: result.message }
    }
    this.grants.set(grant.id, grant)
    this.effective.set(grant.id, result)
    const list = this.bySubject.get(grant.subject) ?? []
    list.push(grant.id)
    // Canonical order (by id), so "the first valid grant" is the same in every verifier.
    list.sort()
    this.bySubject.set(grant.subject, list)
    this.bySubjectCache.delete(grant.subject)
    this.generation++
    return { status: 'accepted' }
  }

  /** The structural position of a grant not yet accepted, or why it has none. */
  private resolveNew(grant: Grant): Effective | GrantError {
    if (grant.fleet !== this.founder) {
      return new GrantError('wrong-fleet', 'grant is for another fleet')
    }
    if (grant.issuer === this.founder) {
      if (grant.parent !== undefined) {
        return new GrantError('malformed', 'the founder issues grants without an e tag')
      }
      return extendChain(
        grant,
        founderRoot(this.founder),
        { role: 'founder', deleg: true },
        this.maxDepth,
      )
    }
    if (grant.parent === undefined) {
      return new GrantError('missing-parent', "a grant must name the issuer's own grant (e)")
    }
    const parent = this.grants.get(grant.parent)
    if (parent === undefined) {
      return new GrantError('unknown-parent', 'the parent grant is not known (publish it first)')
    }
    if (parent.subject !== grant.issuer) {
      return new GrantError('parent-mismatch', "the e tag names a grant that is not the issuer's")
    }
    return extendChain(grant, this.effective.get(parent.id)!, parent, this.maxDepth)
  }

  private addRevocation(rev: Revocation): AddResult {
    const standing = this.judgeRevocation(rev)
    if (standing.status !== 'accepted') return standing
    this.revocations.set(rev.id, rev)
    for (const id of rev.grants) noteRevocation(this.revokesGrant, id, rev)
    for (const key of rev.keys) noteRevocation(this.revokesKey, key, rev)
    if (standing.held === true) {
      // It revokes nothing known, so no decision changes: the caches stay.
      const n = rev.grants.length + rev.keys.length
      this.heldTargets.set(rev.revoker, (this.heldTargets.get(rev.revoker) ?? 0) + n)
      return standing
    }
    this.dead.clear()
    this.ended.clear()
    this.generation++
    return standing
  }

  /** `parseRevocation(event)`, once per event object (its refusal too). */
  private revocationOf(event: NostrEvent): Revocation {
    let parsed = this.parsedRevocations.get(event)
    if (parsed === undefined) {
      try {
        parsed = parseRevocation(event)
      } catch (err) {
        if (!(err instanceof GrantError)) throw err
        parsed = err
      }
      this.parsedRevocations.set(event, parsed)
    }
    if (parsed instanceof GrantError) throw parsed
    return parsed
  }

  /** True when `event` is a revocation this verifier would keep as held (revoking nothing). */
  wouldHold(event: NostrEvent): boolean {
    if (event.kind !== Kind.Revocation) return false
    try {
      const r = this.judgeRevocation(this.revocationOf(event))
      return r.status === 'accepted' && r.held === true
    } catch (err) {
      if (err instanceof GrantError) return false
      throw err
    }
  }

  /**
   * Whether a revocation would be kept, and held (revoking nothing known), without keeping it:
   * the hub charges a held one to its signer's quota. Refused: targets its signer could never
   * stand above, and a signer past maxHeldTargets.
   */
  judgeRevocation(rev: Revocation): AddResult {
    if (rev.fleet !== this.founder) {
      return { status: 'rejected', code: 'wrong-fleet', reason: 'revocation is for another fleet' }
    }
    if (rev.keys.includes(this.founder)) {
      return { status: 'rejected', code: 'no-authority', reason: 'the founder cannot be revoked' }
    }
    if (rev.revoker !== this.founder && !this.bySubject.has(rev.revoker)) {
      // Nothing it says can count before its signer's own grant is known.
      return { status: 'pending', code: 'not-a-member', reason: 'the revoker holds no known grant' }
    }
    if (!this.mayRevoke(rev.revoker)) {
      // A hub key signs nothing but AUTH: its grants are structural (a hub is a hub on every
      // chain), so its revocation is refused outright rather than held to be stored and
      // re-published for nothing. Any other position is judged on structure, like the rest: a
      // grant of another role that arrives later counts.
      const own = this.grantsOf(rev.revoker)
      if (own.length > 0 && own.every((eff) => eff.grant.role === 'hub'))
        return {
          status: 'rejected',
          code: 'kind-not-allowed',
          reason: 'a hub key signs nothing but AUTH',
        }
      return {
        status: 'pending',
        code: 'no-authority',
        reason: 'the authority table lets no key of this position revoke',
      }
    }
    const never = this.neverAbove(rev)
    if (never !== undefined) return { status: 'rejected', code: 'no-authority', reason: never }
    // Otherwise kept whatever it targets: its effect is decided per grant, now and for grants
    // that arrive later, so the effect does not depend on which came first.
    if (this.revokesAnything(rev)) return { status: 'accepted' }
    const held = this.heldTargets.get(rev.revoker) ?? 0
    if (held + rev.grants.length + rev.keys.length > this.maxHeldTargets) {
      return {
        status: 'rejected',
        code: 'too-many-held',
        reason: `this key's held revocations already name ${held} targets (at most ${this.maxHeldTargets})`,
      }
    }
    return { status: 'accepted', held: true }
  }

  /** The table's `revocation` row, asked with every position the revoker's known grants give. */
  private mayRevoke(revoker: string): boolean {
    if (revoker === this.founder) return true
    const classes = this.grantsOf(revoker).flatMap((eff) => positionActor(eff.grant))
    return mayAct('revocation', classes)
  }

  /**
   * A target its signer could never stand above, said, or undefined: itself; a known grant it
   * has no authority over (a grant's chain never changes); a key above it on every chain it
   * holds (a grant from it to that key would be a cycle).
   */
  private neverAbove(rev: Revocation): string | undefined {
    if (rev.revoker === this.founder) return undefined
    if (rev.keys.includes(rev.revoker)) return 'a key cannot revoke itself'
    for (const id of rev.grants) {
      const g = this.grants.get(id)
      if (g !== undefined && !this.hasAuthority(rev.revoker, g)) {
        return `the signer has no authority over grant ${id}`
      }
    }
    const chains = this.grantsOf(rev.revoker)
    for (const key of rev.keys) {
      if (chains.length > 0 && chains.every((eff) => eff.keys.includes(key))) {
        return `${key} stands above the signer on every chain it holds`
      }
    }
    return undefined
  }

  /** True when the revocation revokes at least one grant known now. */
  private revokesAnything(rev: Revocation): boolean {
    const targets = [
      ...rev.grants.map((id) => this.grants.get(id)),
      ...rev.keys.flatMap((k) => (this.bySubject.get(k) ?? []).map((id) => this.grants.get(id))),
    ]
    return targets.some((g) => g !== undefined && this.hasAuthority(rev.revoker, g))
  }

  /**
   * May `revoker` revoke grant `g`: the founder always; otherwise the revoker must hold a
   * position on g's own chain above it — g's issuer, or an owner anywhere above — whose kinds
   * allow revocations. Authority over a key is authority over that key's grants, one by one: a
   * `p` revocation ends exactly the grants of the key its signer stands above.
   */
  private hasAuthority(revoker: string, g: Grant): boolean {
    if (revoker === this.founder) return true
    const chain = this.effective.get(g.id)?.chain ?? []
    for (let i = 0; i < chain.length - 1; i++) {
      const above = chain[i]!
      if (above.subject !== revoker) continue
      const isIssuer = i === chain.length - 2
      if (!isIssuer && above.role !== 'owner') continue
      const kinds = this.effective.get(above.id)?.kinds
      if (kinds === undefined || kinds.has(Kind.Revocation)) return true
    }
    return false
  }

  /** Revoked itself (by someone with authority over it) or below a revoked grant. */
  isRevokedGrant(g: Grant): boolean {
    let d = this.dead.get(g.id)
    if (d === undefined) {
      d = this.revokedItselfAt(g) !== undefined
      if (!d && g.parent !== undefined) {
        const parent = this.grants.get(g.parent)
        d = parent !== undefined && this.isRevokedGrant(parent)
      }
      this.dead.set(g.id, d)
    }
    return d
  }

  /** The earliest revocation naming `g` (`e`) or its subject (`p`) by a signer above it. */
  private revokedItselfAt(g: Grant): number | undefined {
    let at: number | undefined
    for (const signers of [this.revokesGrant.get(g.id), this.revokesKey.get(g.subject)]) {
      if (signers === undefined) continue
      for (const [signer, createdAt] of signers) {
        if ((at === undefined || createdAt < at) && this.hasAuthority(signer, g)) at = createdAt
      }
    }
    return at
  }

  /**
   * When grant `id` stopped counting: the earliest `created_at` of a revocation that revokes it
   * (by someone with authority over it) or a grant above it; undefined while it stands. Used to
   * judge what its subject signed before and after (channel definitions, kith-channels).
   */
  revokedAt(id: string): number | undefined {
    const cached = this.ended.get(id)
    if (cached !== undefined) return cached ?? undefined
    const g = this.grants.get(id)
    if (g === undefined) return undefined
    let at = this.revokedItselfAt(g)
    if (g.parent !== undefined) {
      const above = this.revokedAt(g.parent)
      if (above !== undefined && (at === undefined || above < at)) at = above
    }
    this.ended.set(id, at ?? null)
    return at
  }

  /** Structurally valid grants of `pubkey` with their resolved authority, in canonical order. */
  grantsOf(pubkey: string): Effective[] {
    let list = this.bySubjectCache.get(pubkey)
    if (list === undefined) {
      list = (this.bySubject.get(pubkey) ?? []).map((id) => this.effective.get(id)!)
      this.bySubjectCache.set(pubkey, list)
    }
    return list
  }

  /**
   * May `pubkey` publish now (and, when given, this kind in these channels)? Any one valid chain
   * suffices; grants are tried in canonical order. When none does, the reason is the most
   * specific one found.
   */
  authorize(
    pubkey: string,
    q: {
      now: number
      kind?: number | undefined
      /** One channel, or every channel (`h` value) of the event: each must be allowed. */
      channel?: string | undefined
      channels?: readonly string[] | undefined
      /**
       * History: a grant revoked after this date still counts (what its subject signed while it
       * stood, judged by the event's date against the revocation's). Hubs never pass it: a
       * revoked key publishes nothing new, whatever date it writes.
       */
      signedAt?: number | undefined
    },
  ): Decision {
    if (pubkey === this.founder) return { ok: true, role: 'founder', chain: [] }
    const candidates = this.grantsOf(pubkey)
    if (candidates.length === 0) return refuse('not-a-member', 'not a member of this fleet')
    const channels = q.channels ?? (q.channel === undefined ? [] : [q.channel])
    let best: Refusal | undefined
    const consider = (d: Refusal) => {
      if (best === undefined || (rank[d.code] ?? 0) > (rank[best.code] ?? 0)) best = d
    }
    for (const eff of candidates) {
      const failure = this.check(eff, q.now, q.kind, channels, q.signedAt)
      if (failure === undefined) return { ok: true, role: eff.grant.role, chain: eff.chain }
      consider(failure)
    }
    return best ?? refuse('not-a-member', 'not a member of this fleet')
  }

  private check(
    eff: Effective,
    now: number,
    kind: number | undefined,
    channels: readonly string[],
    signedAt?: number,
  ): Refusal | undefined {
    if (this.isRevokedGrant(eff.grant)) {
      const ended = signedAt === undefined ? undefined : this.revokedAt(eff.grant.id)
      if (ended === undefined || signedAt! >= ended)
        return refuse('revoked', 'this key’s grant has been revoked')
    }
    if (eff.nbf !== undefined && now < eff.nbf - this.skew) {
      return refuse('not-yet-valid', 'the grant is not valid yet')
    }
    if (eff.exp !== undefined && now > eff.exp + this.skew) {
      return refuse('expired', 'the grant has expired')
    }
    // A hub key replicates what others signed; AUTH is not published, so no kind is its own.
    if (kind !== undefined && eff.grant.role === 'hub') {
      return refuse('kind-not-allowed', 'a hub key signs nothing but AUTH')
    }
    if (kind !== undefined && eff.kinds !== undefined && !eff.kinds.has(kind)) {
      return refuse('kind-not-allowed', `kind ${kind} is not allowed for this key`)
    }
    if (eff.channels !== undefined) {
      const outside = channels.find((c) => !eff.channels!.has(c))
      if (outside !== undefined) {
        return refuse('channel-not-allowed', `channel #${outside} is not allowed for this key`)
      }
    }
    return undefined
  }

  isMember(pubkey: string, now: number): Decision {
    return this.authorize(pubkey, { now })
  }

  /**
   * Every chain that makes `pubkey` a member at `now` (not revoked, inside its window), founder's
   * grant first, in canonical order; the founder has one empty chain. With `signedAt` (history,
   * as `authorize` takes it), a grant revoked after that date still counts.
   */
  validChains(pubkey: string, now: number, signedAt?: number): (readonly Grant[])[] {
    if (pubkey === this.founder) return [[]]
    return this.grantsOf(pubkey)
      .filter((eff) => this.check(eff, now, undefined, [], signedAt) === undefined)
      .map((eff) => eff.chain)
  }

  /** Every key that has at least one grant, for listings and cascade reports. */
  subjects(): string[] {
    return [...this.bySubject.keys()]
  }

  /** All accepted grants, in insertion order. */
  allGrants(): Grant[] {
    return [...this.grants.values()]
  }

  getGrant(id: string): Grant | undefined {
    return this.grants.get(id)
  }

  /** The resolved position of an accepted grant. */
  positionOf(id: string): Effective | undefined {
    return this.effective.get(id)
  }

  /** All kept revocations, in insertion order. */
  allRevocations(): Revocation[] {
    return [...this.revocations.values()]
  }

  /** True when every grant of `pubkey` is revoked and a `p` revocation names it. */
  isKeyRevoked(pubkey: string): boolean {
    if (pubkey === this.founder || !this.revokesKey.has(pubkey)) return false
    const grants = this.grantsOf(pubkey)
    return grants.length > 0 && grants.every((eff) => this.isRevokedGrant(eff.grant))
  }

  /** May `revoker` revoke `pubkey`'s key: it stands above at least one of its grants. */
  mayRevokeKey(revoker: string, pubkey: string): boolean {
    return this.grantsOf(pubkey).some((eff) => this.hasAuthority(revoker, eff.grant))
  }

  /** May `revoker` revoke grant `id`. */
  mayRevokeGrant(revoker: string, id: string): boolean {
    const g = this.grants.get(id)
    return g !== undefined && this.hasAuthority(revoker, g)
  }

  /**
   * Grants and revocations accepted since the last call, parents before children (a held grant
   * counts when its parent arrives). Nodes re-publish these to every hub they link to.
   */
  drainAccepted(): string[] {
    const out = this.accepted
    this.accepted = []
    return out
  }

  get pendingCount(): number {
    return this.pending.size
  }
}

function noteRevocation(
  index: Map<string, Map<string, number>>,
  target: string,
  rev: Revocation,
): void {
  let signers = index.get(target)
  if (signers === undefined) index.set(target, (signers = new Map<string, number>()))
  const at = signers.get(rev.revoker)
  if (at === undefined || rev.createdAt < at) signers.set(rev.revoker, rev.createdAt)
}
