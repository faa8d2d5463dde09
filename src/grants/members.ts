import type { Grant, Role } from './grant.js'
import type { GrantVerifier } from './verifier.js'

/**
 * The person (owner key) a key belongs to right now: the key itself for the founder and owners,
 * else the nearest owner above it on its valid chain (an admin's invitee is their own person,
 * not the admin's), else the founder. undefined when the key is not a member now.
 */
export function personOf(v: GrantVerifier, pubkey: string, now: number): string | undefined {
  if (pubkey === v.founder) return pubkey
  const d = v.isMember(pubkey, now)
  if (!d.ok) return undefined
  // An owner's own grant ends its chain, so the nearest owner grant is its own.
  return d.chain.findLast((g) => g.role === 'owner')?.subject ?? v.founder
}

/**
 * Every person behind `key` right now, one per valid chain (a key granted along two chains may
 * belong to two people); `personOf` is the one its first valid chain gives. Empty for a key that
 * is not a member. With `signedAt` (history: an event a since-revoked key signed then), the
 * chains that stood at that date, revocations dated after it set aside (verifier.validChains).
 */
export function personsOf(
  v: GrantVerifier,
  key: string,
  now: number,
  signedAt?: number,
): Set<string> {
  const persons = new Set<string>()
  for (const chain of v.validChains(key, now, signedAt)) {
    const owner = chain.findLast((g) => g.role === 'owner')
    persons.add(owner?.subject ?? v.founder)
  }
  return persons
}

export interface MemberKey {
  pubkey: string
  name: string
  role: Role | 'founder'
  /** `active`, or the verifier's reason code (revoked, expired…). */
  status: string
  /** Who signed its newest grant (undefined for the founder). */
  admittedBy: string | undefined
  /** Owners: may admit owners. Devices: may grant agents. */
  deleg: boolean
}

export interface Person extends MemberKey {
  admin: boolean
  devices: (MemberKey & { agents: MemberKey[] })[]
  /** Agents granted by the owner key directly (not through a device). */
  agents: MemberKey[]
}

/**
 * The fleet as people: the founder and every owner ever admitted, each with the devices and
 * agents granted beneath them. Built from the newest grant of each key; status is decided now,
 * so a removed person and everything beneath them show as revoked.
 */
export function fleetPeople(v: GrantVerifier, now: number): Person[] {
  const newest = new Map<string, Grant>()
  for (const g of v.allGrants()) {
    const prev = newest.get(g.subject)
    if (prev === undefined || g.createdAt >= prev.createdAt) newest.set(g.subject, g)
  }
  const keyOf = (g: Grant): MemberKey => {
    const d = v.isMember(g.subject, now)
    return {
      pubkey: g.subject,
      name: g.name ?? '',
      role: g.role,
      status: d.ok ? 'active' : d.code,
      admittedBy: g.issuer,
      deleg: g.deleg,
    }
  }
  const founder: Person = {
    pubkey: v.founder,
    name: '',
    role: 'founder',
    status: 'active',
    admittedBy: undefined,
    deleg: true,
    admin: true,
    devices: [],
    agents: [],
  }
  const people = new Map<string, Person>([[v.founder, founder]])
  for (const g of newest.values()) {
    if (g.role === 'owner')
      people.set(g.subject, { ...keyOf(g), admin: g.deleg, devices: [], agents: [] })
  }
  // A revoked key has no valid chain, so file it under the issuer of its newest grant.
  const personAbove = (g: Grant): Person | undefined => {
    const direct = people.get(g.issuer)
    if (direct !== undefined) return direct
    const issuerGrant = newest.get(g.issuer)
    return issuerGrant === undefined ? undefined : personAbove(issuerGrant)
  }
  const devices = new Map<string, Person['devices'][number]>()
  for (const g of newest.values()) {
    if (g.role !== 'device') continue
    const device = { ...keyOf(g), agents: [] }
    devices.set(g.subject, device)
    personAbove(g)?.devices.push(device)
  }
  for (const g of newest.values()) {
    if (g.role !== 'agent') continue
    const device = devices.get(g.issuer)
    if (device !== undefined) device.agents.push(keyOf(g))
    else personAbove(g)?.agents.push(keyOf(g))
  }
  return [...people.values()]
}
