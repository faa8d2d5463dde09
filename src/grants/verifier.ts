import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import type { GrantCode } from './codes.js'
import { GrantError, parseGrant, type Grant, type Role } from './grant.js'
import { parseRevocation, type Revocation } from './revocation.js'

/** How far a grant's nbf/exp may be from the verifier's clock. */
export const grantSkewSeconds = 300
export const defaultMaxDepth = 6

/** A grant with what it inherits resolved along its chain. */
export interface Effective {
  grant: Grant
  /** undefined = every kind / every channel. */
  kinds: ReadonlySet<number> | undefined
  channels: ReadonlySet<string> | undefined
  nbf: number | undefined
  exp: number | undefined
  /** Grants from the founder's first grant down to this one. */
  chain: readonly Grant[]
  /** Every key on the chain: the founder, each issuer, and the subject. */
  keys: readonly string[]
}

export type Decision =
  | { ok: true; role: Role | 'founder'; chain: readonly Grant[] }
  | { ok: false; code: GrantCode; reason: string }

export type AddResult =
  | { status: 'accepted' }
  | { status: 'pending'; code: GrantCode; reason: string }
  | { status: 'rejected'; code: GrantCode; reason: string }

export interface VerifierOptions {
  /** The fleet's founder: the pinned root of every chain. */
  founder: string
  maxDepth?: number
  skewSeconds?: number
  /** Checks id and signature; the hub passes its fast verifier, tests the pure-JS one. */
  verifySignature: (event: NostrEvent) => boolean
}

const refuse = (
  code: GrantCode,
  reason: string,
): { ok: false; code: GrantCode; reason: string } => ({
  ok: false,
  code,
  reason,
})

/**
 * The one verifier of grant chains and revocations, used by the hub and by nodes alike. Pure:
 * events in, decisions out. State is the set of accepted grants and revocations, so any two
 * verifiers that hold the same events decide the same way, whatever the arrival order.
 */
export class GrantVerifier {
  readonly founder: string
  private readonly maxDepth: number
  private readonly skew: number
  private readonly verifySignature: (event: NostrEvent) => boolean
  private readonly grants = new Map<string, Grant>()
  private readonly bySubject = new Map<string, string[]>()
  private readonly revocations = new Map<string, Revocation>()
  private readonly revokedGrants = new Set<string>()
  private readonly revokedKeys = new Set<string>()
  /** Events waiting for a parent grant or target they name. */
  private readonly pending = new Map<string, NostrEvent>()
  private readonly effective = new Map<string, Effective | GrantError>()
  private readonly bySubjectCache = new Map<string, Effective[]>()
  /** Bumped on every change; lets callers cache decisions. */
  generation = 0

  constructor(opts: VerifierOptions) {
    this.founder = opts.founder
    this.maxDepth = opts.maxDepth ?? defaultMaxDepth
    this.skew = opts.skewSeconds ?? grantSkewSeconds
    this.verifySignature = opts.verifySignature
  }

  /**
   * Adds a grant (4140) or revocation (4141) after checking its structure and authority.
   * `verified` skips the signature check for events the caller has already verified.
   * `keepPending` holds events whose parent or target is not known yet and retries them as
   * events arrive (nodes syncing out of order); otherwise they are refused as unknown.
   * `now`, when given, also requires the issuer to be authorized at that time to publish this
   * kind (what a hub checks on ingest); replaying stored history passes no `now`.
   */
  add(
    event: NostrEvent,
    opts: { verified?: boolean; keepPending?: boolean; now?: number } = {},
  ): AddResult {
    if (this.grants.has(event.id) || this.revocations.has(event.id)) return { status: 'accepted' }
    if (!opts.verified && !this.verifySignature(event)) {
      return { status: 'rejected', code: 'bad-signature', reason: 'bad signature' }
    }
    if (opts.now !== undefined) {
      const issuer = this.authorize(event.pubkey, { now: opts.now, kind: event.kind })
      // A key with no grant at all gets the structural answer below (missing or unknown parent).
      if (!issuer.ok && issuer.code !== 'not-a-member') {
        return { status: 'rejected', code: issuer.code, reason: `issuer: ${issuer.reason}` }
      }
    }
    const result = this.tryAdd(event)
    if (result.status === 'pending') {
      if (opts.keepPending) this.pending.set(event.id, event)
      else return { status: 'rejected', code: result.code, reason: result.reason }
    }
    if (result.status === 'accepted') this.retryPending()
    return result
  }

  private tryAdd(event: NostrEvent): AddResult {
    try {
      if (event.kind === Kind.Grant) return this.addGrant(parseGrant(event))
      if (event.kind === Kind.Revocation) return this.addRevocation(parseRevocation(event))
      return { status: 'rejected', code: 'malformed', reason: 'not a grant or revocation' }
    } catch (err) {
      if (err instanceof GrantError)
        return { status: 'rejected', code: err.code, reason: err.message }
      throw err
    }
  }

  private retryPending(): void {
    let progress = true
    while (progress && this.pending.size > 0) {
      progress = false
      for (const [id, event] of this.pending) {
        const r = this.tryAdd(event)
        if (r.status === 'pending') continue
        this.pending.delete(id)
        if (r.status === 'accepted') progress = true
      }
    }
  }

  // A grant's resolved chain never changes once accepted (parents are immutable events), so the
  // `effective` cache survives every change; revocations are checked per decision against sets.
  private changed(subject?: string): void {
    this.generation++
    if (subject !== undefined) this.bySubjectCache.delete(subject)
  }

  private addGrant(grant: Grant): AddResult {
    const result = this.resolve(grant)
    if (result instanceof GrantError) {
      const status = result.code === 'unknown-parent' ? 'pending' : 'rejected'
      return { status, code: result.code, reason: result.message }
    }
    this.grants.set(grant.id, grant)
    const list = this.bySubject.get(grant.subject) ?? []
    list.push(grant.id)
    this.bySubject.set(grant.subject, list)
    this.changed(grant.subject)
    return { status: 'accepted' }
  }

  /** The grant's effective authority, or why its chain is structurally invalid. */
  private resolve(grant: Grant): Effective | GrantError {
    const cached = this.effective.get(grant.id)
    if (cached !== undefined) return cached
    const result = this.resolveUncached(grant)
    if (this.grants.has(grant.id)) this.effective.set(grant.id, result)
    return result
  }

  private resolveUncached(grant: Grant): Effective | GrantError {
    if (grant.fleet !== this.founder)
      return new GrantError('wrong-fleet', 'grant is for another fleet')
    if (grant.subject === grant.issuer)
      return new GrantError('self-grant', 'a key cannot grant itself')
    let parent: Effective
    let issuerRole: Role | 'founder'
    let parentDeleg: boolean
    if (grant.issuer === this.founder) {
      if (grant.parent !== undefined) {
        return new GrantError('malformed', 'the founder issues grants without an e tag')
      }
      parent = {
        grant,
        kinds: undefined,
        channels: undefined,
        nbf: undefined,
        exp: undefined,
        chain: [],
        keys: [this.founder],
      }
      issuerRole = 'founder'
      parentDeleg = true
    } else {
      if (grant.parent === undefined) {
        return new GrantError('missing-parent', "a grant must name the issuer's own grant (e)")
      }
      const parentGrant = this.grants.get(grant.parent)
      if (parentGrant === undefined) {
        return new GrantError('unknown-parent', 'the parent grant is not known (publish it first)')
      }
      if (parentGrant.subject !== grant.issuer) {
        return new GrantError('parent-mismatch', "the e tag names a grant that is not the issuer's")
      }
      const resolved = this.resolve(parentGrant)
      if (resolved instanceof GrantError) return resolved
      parent = resolved
      issuerRole = parentGrant.role
      parentDeleg = parentGrant.deleg
    }
    const authority = mayIssue(issuerRole, parentDeleg, grant.role)
    if (authority !== undefined) return new GrantError('no-authority', authority)
    if (parent.keys.includes(grant.subject)) {
      return new GrantError('cycle', 'the subject already appears above itself in the chain')
    }
    if (parent.chain.length + 1 > this.maxDepth) {
      return new GrantError('too-deep', `chains are at most ${this.maxDepth} grants long`)
    }
    const kinds = narrow(parent.kinds, grant.kinds)
    if (kinds === 'wider')
      return new GrantError('wider-kinds', 'grants kinds its parent does not have')
    const channels = narrow(parent.channels, grant.channels)
    if (channels === 'wider') {
      return new GrantError('wider-channels', 'grants channels its parent does not have')
    }
    if (
      (parent.nbf !== undefined && grant.nbf !== undefined && grant.nbf < parent.nbf) ||
      (parent.exp !== undefined && grant.exp !== undefined && grant.exp > parent.exp)
    ) {
      return new GrantError('wider-window', "the validity window reaches outside the parent's")
    }
    return {
      grant,
      kinds,
      channels,
      nbf: grant.nbf ?? parent.nbf,
      exp: grant.exp ?? parent.exp,
      chain: [...parent.chain, grant],
      keys: [...parent.keys, grant.subject],
    }
  }

  private addRevocation(rev: Revocation): AddResult {
    if (rev.fleet !== this.founder) {
      return { status: 'rejected', code: 'wrong-fleet', reason: 'revocation is for another fleet' }
    }
    for (const id of rev.grants) {
      const grant = this.grants.get(id)
      if (grant === undefined) {
        return { status: 'pending', code: 'unknown-target', reason: `grant ${id} is not known` }
      }
      if (grant.issuer !== rev.revoker && !this.isOwnerAbove(rev.revoker, grant)) {
        return {
          status: 'rejected',
          code: 'no-authority',
          reason: 'only the issuer or an owner above it may revoke a grant',
        }
      }
    }
    for (const key of rev.keys) {
      if (key === this.founder) {
        return { status: 'rejected', code: 'no-authority', reason: 'the founder cannot be revoked' }
      }
      const grants = (this.bySubject.get(key) ?? []).map((id) => this.grants.get(id)!)
      if (grants.length === 0) {
        return { status: 'pending', code: 'unknown-target', reason: `no grant to ${key} is known` }
      }
      const allowed = grants.some(
        (g) => g.issuer === rev.revoker || this.isOwnerAbove(rev.revoker, g),
      )
      if (!allowed) {
        return {
          status: 'rejected',
          code: 'no-authority',
          reason: 'only an issuer or an owner above the key may revoke it',
        }
      }
    }
    this.revocations.set(rev.id, rev)
    for (const id of rev.grants) this.revokedGrants.add(id)
    for (const key of rev.keys) this.revokedKeys.add(key)
    this.changed()
    return { status: 'accepted' }
  }

  /** True when `key` is the founder or an owner on the grant's chain above its subject. */
  private isOwnerAbove(key: string, grant: Grant): boolean {
    if (key === this.founder) return true
    const eff = this.resolve(grant)
    if (eff instanceof GrantError) return false
    return eff.chain.slice(0, -1).some((g) => g.subject === key && g.role === 'owner')
  }

  /** Structurally valid grants of `pubkey` with their resolved authority. */
  grantsOf(pubkey: string): Effective[] {
    let list = this.bySubjectCache.get(pubkey)
    if (list === undefined) {
      list = []
      for (const id of this.bySubject.get(pubkey) ?? []) {
        const eff = this.resolve(this.grants.get(id)!)
        if (!(eff instanceof GrantError)) list.push(eff)
      }
      this.bySubjectCache.set(pubkey, list)
    }
    return list
  }

  private isRevoked(eff: Effective): boolean {
    return (
      eff.keys.some((k) => this.revokedKeys.has(k)) ||
      eff.chain.some((g) => this.revokedGrants.has(g.id))
    )
  }

  /**
   * May `pubkey` publish now (and, when given, this kind in this channel)? Any one valid chain
   * suffices. When none does, the reason is the most specific one found.
   */
  authorize(
    pubkey: string,
    q: { now: number; kind?: number | undefined; channel?: string | undefined },
  ): Decision {
    if (pubkey === this.founder) return { ok: true, role: 'founder', chain: [] }
    const candidates = this.grantsOf(pubkey)
    if (candidates.length === 0) return refuse('not-a-member', 'not a member of this fleet')
    if (this.revokedKeys.has(pubkey)) return refuse('revoked', 'this key has been revoked')
    let best: { ok: false; code: GrantCode; reason: string } | undefined
    const rank: Partial<Record<GrantCode, number>> = {
      revoked: 1,
      expired: 2,
      'not-yet-valid': 2,
      'kind-not-allowed': 3,
      'channel-not-allowed': 3,
    }
    const consider = (d: { ok: false; code: GrantCode; reason: string }) => {
      if (best === undefined || (rank[d.code] ?? 0) > (rank[best.code] ?? 0)) best = d
    }
    for (const eff of candidates) {
      if (this.isRevoked(eff)) {
        consider(refuse('revoked', 'a grant on this key’s chain has been revoked'))
        continue
      }
      if (eff.nbf !== undefined && q.now < eff.nbf - this.skew) {
        consider(refuse('not-yet-valid', 'the grant is not valid yet'))
        continue
      }
      if (eff.exp !== undefined && q.now > eff.exp + this.skew) {
        consider(refuse('expired', 'the grant has expired'))
        continue
      }
      if (q.kind !== undefined && eff.kinds !== undefined && !eff.kinds.has(q.kind)) {
        consider(refuse('kind-not-allowed', `kind ${q.kind} is not allowed for this key`))
        continue
      }
      if (q.channel !== undefined && eff.channels !== undefined && !eff.channels.has(q.channel)) {
        consider(refuse('channel-not-allowed', `channel #${q.channel} is not allowed for this key`))
        continue
      }
      return { ok: true, role: eff.grant.role, chain: eff.chain }
    }
    return best ?? refuse('not-a-member', 'not a member of this fleet')
  }

  isMember(pubkey: string, now: number): Decision {
    return this.authorize(pubkey, { now })
  }

  /**
   * Every chain that makes `pubkey` a member at `now` (not revoked, inside its window), founder's
   * grant first; the founder has one empty chain. Used to find the person behind a key whatever
   * order its grants arrived in.
   */
  validChains(pubkey: string, now: number): (readonly Grant[])[] {
    if (pubkey === this.founder) return [[]]
    if (this.revokedKeys.has(pubkey)) return []
    return this.grantsOf(pubkey)
      .filter(
        (eff) =>
          !this.isRevoked(eff) &&
          (eff.nbf === undefined || now >= eff.nbf - this.skew) &&
          (eff.exp === undefined || now <= eff.exp + this.skew),
      )
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

  isKeyRevoked(pubkey: string): boolean {
    return this.revokedKeys.has(pubkey)
  }

  get pendingCount(): number {
    return this.pending.size
  }
}

/** Why `issuer` (with this role and deleg) may not grant `role`, or undefined when it may. */
function mayIssue(issuer: Role | 'founder', deleg: boolean, role: Role): string | undefined {
  if (issuer === 'founder') return undefined
  if (issuer === 'agent') return 'agents never issue grants'
  if (issuer === 'owner') {
    if (role === 'owner' && !deleg) return 'only an admin owner (deleg) may admit owners'
    return undefined
  }
  if (role !== 'agent') return 'a device may only grant agents'
  if (!deleg) return 'this device may not delegate (no deleg in its grant)'
  return undefined
}

/** A child's caps against its parent's: the child's own list must be a subset. */
function narrow<T>(
  parent: ReadonlySet<T> | undefined,
  child: readonly T[] | undefined,
): ReadonlySet<T> | undefined | 'wider' {
  if (child === undefined) return parent
  if (parent !== undefined && child.some((c) => !parent.has(c))) return 'wider'
  return new Set(child)
}
