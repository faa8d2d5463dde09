import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf, signEvent, verifyEventSignature } from '../../src/events/event.js'
import { GrantError, signGrant, type Role } from '../../src/grants/grant.js'
import { fleetPeople, personOf } from '../../src/grants/members.js'
import { describePolicy, parsePolicy, policyAllows } from '../../src/grants/policy.js'
import { makeRevocation } from '../../src/grants/revocation.js'
import { GrantVerifier } from '../../src/grants/verifier.js'

const now = 1_800_000_000

/** A fleet built from real signed grants: founder alice, admin carol, bob admitted by carol. */
function fleet() {
  const key = () => {
    const sk = generateSecretKey()
    return { sk, pk: publicKeyOf(sk) }
  }
  const [alice, carol, bob, aliceLaptop, bobDevbox, bobAgent] = [1, 2, 3, 4, 5, 6].map(key) as [
    ReturnType<typeof key>,
    ...ReturnType<typeof key>[],
  ]
  const v = new GrantVerifier({ founder: alice.pk, verifySignature: verifyEventSignature })
  const grant = (
    issuer: { sk: Uint8Array },
    subject: { pk: string; sk: Uint8Array },
    role: Role,
    extra: { deleg?: boolean; parent?: string; name?: string } = {},
  ) => {
    const e = signGrant(
      { subject: subject.pk, role, fleet: alice.pk, ...extra },
      issuer.sk,
      subject.sk,
      now,
    )
    expect(v.add(e).status).toBe('accepted')
    return e.id
  }
  const gCarol = grant(alice, carol!, 'owner', { deleg: true, name: 'carol' })
  const gBob = grant(carol!, bob!, 'owner', { parent: gCarol, name: 'bob' })
  grant(alice, aliceLaptop!, 'device', { deleg: true, name: 'alice-laptop' })
  const gDev = grant(bob!, bobDevbox!, 'device', { deleg: true, parent: gBob, name: 'bob-devbox' })
  grant(bobDevbox!, bobAgent!, 'agent', { parent: gDev, name: 'bobs' })
  return {
    v,
    alice,
    carol: carol!,
    bob: bob!,
    aliceLaptop: aliceLaptop!,
    bobDevbox: bobDevbox!,
    bobAgent: bobAgent!,
  }
}

describe('the person of a key', () => {
  it('is the nearest owner above it: an admin’s invitee is their own person', () => {
    const f = fleet()
    expect(personOf(f.v, f.alice.pk, now)).toBe(f.alice.pk)
    expect(personOf(f.v, f.aliceLaptop.pk, now)).toBe(f.alice.pk)
    expect(personOf(f.v, f.bob.pk, now)).toBe(f.bob.pk)
    expect(personOf(f.v, f.bobDevbox.pk, now)).toBe(f.bob.pk)
    expect(personOf(f.v, f.bobAgent.pk, now)).toBe(f.bob.pk)
    expect(personOf(f.v, publicKeyOf(generateSecretKey()), now)).toBeUndefined()
  })

  it('is gone, with everything beneath, once the person is removed', () => {
    const f = fleet()
    const rev = signEvent(makeRevocation({ keys: [f.bob.pk], fleet: f.alice.pk }, now), f.alice.sk)
    expect(f.v.add(rev).status).toBe('accepted')
    expect(personOf(f.v, f.bobAgent.pk, now)).toBeUndefined()
    const bob = fleetPeople(f.v, now).find((p) => p.pubkey === f.bob.pk)!
    expect(bob).toMatchObject({ name: 'bob', status: 'revoked', admin: false })
    expect(bob.devices).toEqual([
      expect.objectContaining({
        name: 'bob-devbox',
        status: 'revoked',
        agents: [expect.objectContaining({ name: 'bobs', status: 'revoked' })],
      }),
    ])
  })

  it('lists people with who admitted whom and who is an admin', () => {
    const f = fleet()
    const people = fleetPeople(f.v, now)
    expect(people.map((p) => [p.pubkey, p.role, p.admin, p.admittedBy])).toEqual([
      [f.alice.pk, 'founder', true, undefined],
      [f.carol.pk, 'owner', true, f.alice.pk],
      [f.bob.pk, 'owner', false, f.carol.pk],
    ])
    expect(people[0]!.devices.map((d) => d.name)).toEqual(['alice-laptop'])
  })
})

describe('agent policies', () => {
  const owner = 'a'.repeat(64)
  const other = 'b'.repeat(64)
  const device = 'c'.repeat(64)

  it('lets the owner in under every policy and strangers under none', () => {
    for (const p of ['owner', 'fleet', [other]] as const) {
      expect(policyAllows(p, { key: device, person: owner }, owner)).toBe(true)
      expect(policyAllows(p, { key: device, person: undefined }, owner)).toBe(false)
    }
    expect(policyAllows(undefined, { key: other, person: other }, owner)).toBe(false)
    expect(policyAllows('fleet', { key: other, person: other }, owner)).toBe(true)
    expect(policyAllows('owner', { key: other, person: other }, undefined)).toBe(false)
  })

  it('matches a listed person (any of their keys) or one exact key', () => {
    expect(policyAllows([other], { key: device, person: other }, owner)).toBe(true)
    expect(policyAllows([device], { key: device, person: other }, owner)).toBe(true)
    expect(policyAllows([device], { key: 'd'.repeat(64), person: other }, owner)).toBe(false)
  })

  it('parses its stored forms and names what is wrong', () => {
    expect(parsePolicy('fleet', 'allow')).toBe('fleet')
    expect(parsePolicy([other, other], 'allow')).toEqual([other])
    for (const bad of ['everyone', [], ['npub1xyz'], 7]) {
      expect(() => parsePolicy(bad, 'allow')).toThrow(GrantError)
      try {
        parsePolicy(bad, 'allow')
      } catch (err) {
        expect(err).toMatchObject({ code: 'invalid', reason: 'malformed' })
      }
    }
    expect(describePolicy(undefined)).toBe('owner')
    expect(describePolicy([other, device])).toBe('owner + 2 listed keys')
  })
})
