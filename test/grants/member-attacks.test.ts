import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { makeGrant, signGrant, signGrantProof, type GrantSpec } from '../../src/grants/grant.js'
import { personOf } from '../../src/grants/members.js'
import { makeRevocation } from '../../src/grants/revocation.js'
import { join } from 'node:path'
import { startHub } from '../../src/hub/server.js'
import { startTestHub, type TestHub } from '../helpers/hub.js'
import type { RawClient } from '../helpers/raw-client.js'

const now = () => Math.floor(Date.now() / 1000)
const key = () => {
  const sk = generateSecretKey()
  return { sk, pk: publicKeyOf(sk) }
}

async function publish(c: RawClient, e: NostrEvent) {
  c.send(['EVENT', e])
  return c.ok(e.id)
}

/**
 * Alice founds the fleet and hosts an agent on her laptop; Bob is a plain member she admitted
 * (an owner without deleg, with his own laptop). Bob is the attacker.
 */
async function fleet(t: TestHub) {
  const founder = await t.member()
  const g = (spec: Omit<GrantSpec, 'fleet' | 'proof'>, by: Uint8Array, to: Uint8Array) =>
    signGrant({ ...spec, fleet: t.owner }, by, to, now())
  const aliceLaptop = key()
  const aliceAgent = key()
  const bob = key()
  const bobLaptop = key()
  const laptopGrant = g(
    { subject: aliceLaptop.pk, role: 'device', deleg: true },
    t.ownerSk,
    aliceLaptop.sk,
  )
  const agentGrant = g(
    { subject: aliceAgent.pk, role: 'agent', parent: laptopGrant.id, name: 'helper' },
    aliceLaptop.sk,
    aliceAgent.sk,
  )
  const bobGrant = g({ subject: bob.pk, role: 'owner', name: 'bob' }, t.ownerSk, bob.sk)
  const bobLaptopGrant = g(
    { subject: bobLaptop.pk, role: 'device', deleg: true, parent: bobGrant.id },
    bob.sk,
    bobLaptop.sk,
  )
  for (const e of [laptopGrant, agentGrant, bobGrant, bobLaptopGrant]) {
    expect((await publish(founder, e))[2]).toBe(true)
  }
  const bobConn = await t.connect()
  expect((await bobConn.auth(t.url, bobLaptop.sk))[2]).toBe(true)
  return { founder, aliceLaptop, aliceAgent, bob, bobLaptop, bobGrant, bobLaptopGrant, bobConn }
}

describe('a member cannot capture, revoke or impersonate another person’s keys', () => {
  it('cannot grant the founder’s device to himself and then revoke it for good', async () => {
    const t = await startTestHub()
    const f = await fleet(t)
    // Bob cannot make the device's consent; his own signature in its place is refused.
    const capture = signEvent(
      makeGrant(
        {
          subject: f.aliceLaptop.pk,
          role: 'device',
          fleet: t.owner,
          parent: f.bobGrant.id,
          proof: signGrantProof(f.bob.sk, f.bob.pk, 'device'),
        },
        now(),
      ),
      f.bob.sk,
    )
    expect((await publish(f.bobConn, capture))[3]).toMatch(/^invalid: bad-proof: /)
    // A p revocation of the founder's device: kept (held) but Bob stands above none of its
    // grants, so it revokes nothing.
    const revoke = signEvent(
      makeRevocation({ fleet: t.owner, keys: [f.aliceLaptop.pk, f.aliceAgent.pk] }, now()),
      f.bob.sk,
    )
    expect((await publish(f.bobConn, revoke))[3]).toMatch(/^held: /)
    const laptop = await t.connect()
    expect((await laptop.auth(t.url, f.aliceLaptop.sk))[2]).toBe(true)
    const post = signEvent(
      { kind: 9, created_at: now(), tags: [['h', 'ops']], content: 'still here' },
      f.aliceAgent.sk,
    )
    expect((await publish(laptop, post))[2]).toBe(true)
    // …and the same after a restart of the hub, which rebuilds its state from the stored set.
    await t.hub.close()
    const again = await startHub({
      port: 0,
      dbPath: join(t.dir, 'hub.db'),
      founder: t.owner,
      verifyWorkers: 0,
    })
    try {
      expect(again.grants.isMember(f.aliceAgent.pk, now()).ok).toBe(true)
      expect(again.grants.isMember(f.aliceLaptop.pk, now()).ok).toBe(true)
    } finally {
      await again.close()
    }
  })

  it('cannot take over another person’s agent with a back-dated grant', async () => {
    const t = await startTestHub()
    const f = await fleet(t)
    const backDated = signEvent(
      makeGrant(
        {
          subject: f.aliceAgent.pk,
          role: 'agent',
          fleet: t.owner,
          parent: f.bobLaptopGrant.id,
          proof: signGrantProof(f.bobLaptop.sk, f.bobLaptop.pk, 'agent'),
        },
        1_000_000,
      ),
      f.bobLaptop.sk,
    )
    expect((await publish(f.bobConn, backDated))[3]).toMatch(/^invalid: bad-proof: /)
    // The agent's person is Alice (the founder), whatever order the hub's grants are read in.
    expect(personOf(t.hub.grants, f.aliceAgent.pk, now())).toBe(t.owner)
  })

  it('cannot post outside his channel cap by adding a second h tag', async () => {
    const t = await startTestHub()
    const f = await fleet(t)
    const capped = key()
    const grant = signGrant(
      {
        subject: capped.pk,
        role: 'agent',
        fleet: t.owner,
        parent: f.bobLaptopGrant.id,
        channels: ['ops'],
      },
      f.bobLaptop.sk,
      capped.sk,
      now(),
    )
    expect((await publish(f.bobConn, grant))[2]).toBe(true)
    const both = signEvent(
      {
        kind: 9,
        created_at: now(),
        tags: [
          ['h', 'ops'],
          ['h', 'finance'],
        ],
        content: 'sneaky',
      },
      capped.sk,
    )
    expect((await publish(f.bobConn, both))[3]).toBe(
      'restricted: channel-not-allowed: channel #finance is not allowed for this key',
    )
    const ops = signEvent(
      { kind: 9, created_at: now(), tags: [['h', 'ops']], content: 'fine' },
      capped.sk,
    )
    expect((await publish(f.bobConn, ops))[2]).toBe(true)
  })
})
