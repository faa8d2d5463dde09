import { schnorr } from '@noble/curves/secp256k1.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js'
import { isChannelName } from '../events/channel-def.js'
import type { EventTemplate, NostrEvent } from '../events/event.js'
import { isHex64, publicKeyOf, signEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { KithError } from '../errors.js'
import { grantCodePrefix, type GrantCode } from './codes.js'

/**
 * `hub`: a hub's own key, admitted by the founder alone so that the hub may replicate with its
 * peers (kith-grants, "Hub keys"): it reads everything, signs nothing but AUTH, grants nothing.
 */
export type Role = 'owner' | 'device' | 'agent' | 'hub'
export const roles: readonly Role[] = ['owner', 'device', 'agent', 'hub']

/** A parsed kind-4140 grant: `issuer` (the event's pubkey) authorizes `subject` as `role`. */
export interface Grant {
  id: string
  issuer: string
  subject: string
  role: Role
  fleet: string
  /** Kinds the subject may publish; undefined = as the parent. */
  kinds?: number[]
  /** Channels (`h` tag values) the subject may post in; undefined = as the parent. */
  channels?: string[]
  /** May issue grants below (owner: admit owners; device: grant agents). */
  deleg: boolean
  nbf?: number
  exp?: number
  /** The issuer's own grant; absent only when the founder issues. */
  parent?: string
  /** A display name for the subject (informational). */
  name?: string
  /** The subject's BIP-340 signature consenting to this issuer and role (see grantProofDigest). */
  proof: string
  createdAt: number
}

/**
 * A grant or revocation refused: a KithError whose `code` is its NIP-01 prefix (`invalid` or
 * `restricted`, see grantCodePrefix) and whose `reason` is the verifier's stable GrantCode.
 */
export class GrantError extends KithError {
  override readonly name: string = 'GrantError'
  declare readonly reason: GrantCode

  constructor(reason: GrantCode, message: string) {
    super(grantCodePrefix(reason), message, { reason })
  }
}

export interface GrantSpec {
  subject: string
  role: Role
  fleet: string
  kinds?: number[]
  channels?: string[]
  deleg?: boolean
  nbf?: number
  exp?: number
  parent?: string
  name?: string
  /** The subject's consent (signGrantProof); a grant without one is refused. */
  proof: string
}

/**
 * What the subject signs to accept a grant: sha256("kith-grant-proof:<issuer>:<role>"). Only the
 * holder of a key can make it, so no member can grant (and so capture or revoke) a key that is
 * another person's; it names the issuer, so it cannot be moved to another issuer's grant.
 */
export function grantProofDigest(issuer: string, role: Role): Uint8Array {
  return sha256(utf8ToBytes(`kith-grant-proof:${issuer}:${role}`))
}

/** The subject's consent to be granted `role` by `issuer`, as 128 hex. */
export function signGrantProof(subjectSecret: Uint8Array, issuer: string, role: Role): string {
  return bytesToHex(schnorr.sign(grantProofDigest(issuer, role), subjectSecret))
}

/** True when the grant carries its subject's valid consent to its issuer and role. Fails closed. */
export function verifyGrantProof(
  grant: Pick<Grant, 'issuer' | 'subject' | 'role' | 'proof'>,
): boolean {
  try {
    return schnorr.verify(
      hexToBytes(grant.proof),
      grantProofDigest(grant.issuer, grant.role),
      hexToBytes(grant.subject),
    )
  } catch {
    // A malformed signature or an off-curve key is simply not a proof.
    return false
  }
}

/** The unsigned kind-4140 event for a grant. Tag order is fixed so ids are reproducible. */
export function makeGrant(spec: GrantSpec, createdAt: number): EventTemplate {
  const tags: string[][] = [
    ['p', spec.subject],
    ['role', spec.role],
    ['fleet', spec.fleet],
    ['proof', spec.proof],
  ]
  if (spec.parent !== undefined) tags.push(['e', spec.parent])
  for (const k of spec.kinds ?? []) tags.push(['kind', String(k)])
  for (const c of spec.channels ?? []) tags.push(['channel', c])
  // An explicit empty list must survive the round trip: it means "nothing", not "inherit".
  if (spec.kinds?.length === 0) tags.push(['kind'])
  if (spec.channels?.length === 0) tags.push(['channel'])
  if (spec.deleg) tags.push(['deleg'])
  if (spec.nbf !== undefined) tags.push(['nbf', String(spec.nbf)])
  if (spec.exp !== undefined) tags.push(['exp', String(spec.exp)])
  if (spec.name !== undefined) tags.push(['name', spec.name])
  return { kind: Kind.Grant, created_at: createdAt, tags, content: '' }
}

/**
 * A signed grant when the caller holds both keys (a node granting its own device or a new agent
 * key, tests, vectors): the subject's proof is made here.
 */
export function signGrant(
  spec: Omit<GrantSpec, 'proof'>,
  issuerSecret: Uint8Array,
  subjectSecret: Uint8Array,
  createdAt: number,
): NostrEvent {
  const proof = signGrantProof(subjectSecret, publicKeyOf(issuerSecret), spec.role)
  return signEvent(makeGrant({ ...spec, proof }, createdAt), issuerSecret)
}

function malformed(message: string): GrantError {
  return new GrantError('malformed', message)
}

function parseTime(value: string | undefined, name: string): number {
  if (value === undefined || !/^\d{1,10}$/.test(value)) {
    throw malformed(`${name} must be unix seconds`)
  }
  return Number(value)
}

/** The value of an optional single-valued tag; a repeated or empty-valued one is malformed. */
function single(tags: string[][], name: string): string | undefined {
  const found = tags.filter((t) => t[0] === name)
  if (found.length > 1) throw malformed(`more than one ${name} tag`)
  const tag = found[0]
  if (tag === undefined) return undefined
  // ["exp"] alone is not "no expiry": a tag that is present must carry its value.
  if (tag.length < 2 || tag[1] === '') throw malformed(`the ${name} tag has no value`)
  return tag[1]
}

/** Parses a kind-4140 event's tags; throws GrantError('malformed') naming the problem. */
export function parseGrant(event: NostrEvent): Grant {
  if (event.kind !== Kind.Grant) throw malformed(`a grant is kind ${Kind.Grant}`)
  const { tags } = event
  const subject = single(tags, 'p')
  if (!isHex64(subject)) throw malformed('p (subject) must be a 64-hex pubkey')
  const role = single(tags, 'role')
  if (!roles.includes(role as Role)) throw malformed('role must be owner, device, agent or hub')
  const fleet = single(tags, 'fleet')
  if (!isHex64(fleet)) throw malformed('fleet must be the founder 64-hex pubkey')
  const parent = single(tags, 'e')
  if (parent !== undefined && !isHex64(parent)) throw malformed('e (parent grant) must be an id')
  const proof = single(tags, 'proof')
  if (proof === undefined || !/^[0-9a-f]{128}$/.test(proof)) {
    throw malformed("a grant carries the subject's proof: one proof tag of 128 hex")
  }
  const grant: Grant = {
    id: event.id,
    issuer: event.pubkey,
    subject,
    role: role as Role,
    fleet,
    deleg: tags.some((t) => t[0] === 'deleg'),
    proof,
    createdAt: event.created_at,
  }
  if (parent !== undefined) grant.parent = parent
  const kindTags = tags.filter((t) => t[0] === 'kind')
  if (kindTags.length > 0) {
    grant.kinds = kindTags.flatMap((t) => {
      if (t.length === 1) return []
      const v = t[1] ?? ''
      if (!/^(0|[1-9]\d{0,4})$/.test(v) || Number(v) > 65535) {
        throw malformed('kind tags hold 0-65535, without leading zeros')
      }
      return [Number(v)]
    })
  }
  const channelTags = tags.filter((t) => t[0] === 'channel')
  if (channelTags.length > 0) {
    grant.channels = channelTags.flatMap((t) => {
      if (t.length === 1) return []
      if (!isChannelName(t[1])) throw malformed('channel tags hold channel names (kith-chat)')
      return [t[1]]
    })
  }
  const nbf = single(tags, 'nbf')
  const exp = single(tags, 'exp')
  if (nbf !== undefined) grant.nbf = parseTime(nbf, 'nbf')
  if (exp !== undefined) grant.exp = parseTime(exp, 'exp')
  if (grant.nbf !== undefined && grant.exp !== undefined && grant.nbf > grant.exp) {
    throw malformed('nbf is after exp')
  }
  const names = tags.filter((t) => t[0] === 'name')
  if (names.length > 1) throw malformed('more than one name tag')
  // A name is informational: an empty one is no name.
  const name = names[0]?.[1]
  if (name !== undefined && name !== '') grant.name = name
  if (grant.role === 'agent' && grant.deleg) throw malformed('agents never delegate')
  if (grant.role === 'hub' && grant.deleg) throw malformed('hubs never delegate')
  return grant
}
