import { Kind } from '../events/kinds.js'
import { mayAct } from './authority.js'
import { grantRoleAction, positionActor } from './event-authority.js'
import { GrantError, verifyGrantProof, type Grant, type Role } from './grant.js'

/** A grant with what it inherits resolved along its chain. Immutable once computed. */
export interface Effective {
  grant: Grant
  /** undefined = every kind / every channel. */
  kinds: ReadonlySet<number> | undefined
  channels: ReadonlySet<string> | undefined
  nbf: number | undefined
  exp: number | undefined
  /** Grants from the founder's grant down to this one. */
  chain: readonly Grant[]
  /** Every key on the chain: the founder, each issuer, and the subject. */
  keys: readonly string[]
}

/**
 * Proof checks already made, by grant id. Sound because an id covers the whole event, proof
 * included, and the verifier checks (or is told the caller checked) the id before the proof; it
 * spares a Schnorr verification per grant on every replay. Bounded: oldest entries go first.
 */
const proofChecked = new Map<string, boolean>()
const proofCacheSize = 20_000

function proofHolds(grant: Grant): boolean {
  let ok = proofChecked.get(grant.id)
  if (ok === undefined) {
    ok = verifyGrantProof(grant)
    if (proofChecked.size >= proofCacheSize) proofChecked.delete(proofChecked.keys().next().value!)
    proofChecked.set(grant.id, ok)
  }
  return ok
}

/** The founder's own position: unrestricted, the root of every chain. */
export function founderRoot(founder: string): Omit<Effective, 'grant'> {
  return {
    kinds: undefined,
    channels: undefined,
    nbf: undefined,
    exp: undefined,
    chain: [],
    keys: [founder],
  }
}

/**
 * The structural checks of one grant against its parent's resolved position (kith-grants,
 * "Validity of a grant", steps 4–9). Pure and time-free: the answer depends only on the two
 * grants, so every verifier that holds them decides the same.
 */
export function extendChain(
  grant: Grant,
  parent: Omit<Effective, 'grant'>,
  issuer: { role: Role | 'founder'; deleg: boolean },
  maxDepth: number,
): Effective | GrantError {
  if (grant.subject === grant.issuer)
    return new GrantError('self-grant', 'a key cannot grant itself')
  if (!proofHolds(grant)) {
    return new GrantError(
      'bad-proof',
      "the proof tag is not the subject's signature for this issuer and role",
    )
  }
  const authority = mayIssue(issuer.role, issuer.deleg, grant.role, grant.deleg)
  if (authority !== undefined) return new GrantError('no-authority', authority)
  if (parent.kinds !== undefined && !parent.kinds.has(Kind.Grant)) {
    return new GrantError(
      'kind-not-allowed',
      `the issuer's grant does not allow kind ${Kind.Grant}`,
    )
  }
  if (parent.keys.includes(grant.subject)) {
    return new GrantError('cycle', 'the subject already appears above itself in the chain')
  }
  if (parent.chain.length + 1 > maxDepth) {
    return new GrantError('too-deep', `chains are at most ${maxDepth} grants long`)
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

/**
 * Why `issuer` (with this role and deleg) may not grant `role` (with `grantDeleg`), or undefined
 * when it may. Who may is the authority table's (grant.owner, grant.admin, grant.device,
 * grant.agent, grant.hub), asked with the issuer's position; what is left here binds the role to
 * the key: an agent key is a member but issues nothing, and a device grants only agents.
 */
function mayIssue(
  issuer: Role | 'founder',
  deleg: boolean,
  role: Role,
  grantDeleg: boolean,
): string | undefined {
  const action = grantRoleAction(role, grantDeleg)
  if (!mayAct(action, positionActor({ role: issuer, deleg }))) {
    if (issuer === 'hub' || issuer === 'agent') return `${issuer}s never issue grants`
    if (issuer === 'device') return 'a device may only grant agents'
    // A hub key reads every channel, private ones included: only the founder may admit one.
    if (role === 'hub') return 'only the founder may admit a hub'
    if (role === 'owner') return 'only an admin owner (deleg) may admit owners'
    return `the authority table does not let this key take ${action}`
  }
  if (issuer === 'founder') return undefined
  if (issuer === 'agent') return 'agents never issue grants'
  if (issuer === 'owner') return undefined
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
