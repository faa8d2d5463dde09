import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { signGrant, type GrantSpec } from '../../src/grants/grant.js'
import { makeRevocation } from '../../src/grants/revocation.js'
import { startTestHub, type TestHub } from '../helpers/hub.js'
import type { RawClient } from '../helpers/raw-client.js'

const now = () => Math.floor(Date.now() / 1000)

async function publish(c: RawClient, e: NostrEvent) {
  c.send(['EVENT', e])
  return c.ok(e.id)
}

/** founder(owner) → device (deleg) → agent, all published through the owner's connection. */
async function fleet(t: TestHub) {
  const owner = await t.member()
  const deviceSk = generateSecretKey()
  const agentSk = generateSecretKey()
  const g = (spec: Omit<GrantSpec, 'fleet' | 'proof'>, sk: Uint8Array, subjectSk: Uint8Array) =>
    signGrant({ ...spec, fleet: t.owner }, sk, subjectSk, now())
  const deviceGrant = g(
    { subject: publicKeyOf(deviceSk), role: 'device', deleg: true },
    t.ownerSk,
    deviceSk,
  )
  const agentGrant = g(
    { subject: publicKeyOf(agentSk), role: 'agent', parent: deviceGrant.id },
    deviceSk,
    agentSk,
  )
  expect((await publish(owner, deviceGrant))[2]).toBe(true)
  expect((await publish(owner, agentGrant))[2]).toBe(true)
  return { owner, deviceSk, agentSk, deviceGrant, agentGrant }
}

describe('hub enforcement of grants and revocations', () => {
  it('admits a granted agent, then drops its live connection when its key is revoked', async () => {
    const t = await startTestHub()
    const f = await fleet(t)
    const agent = await t.connect()
    expect((await agent.auth(t.url, f.agentSk))[2]).toBe(true)
    expect((await agent.req('live', { kinds: [9] })).end[0]).toBe('EOSE')
    const hello = signEvent(
      { kind: 9, created_at: now(), tags: [], content: 'agent here' },
      f.agentSk,
    )
    expect(await publish(agent, hello)).toEqual(['OK', hello.id, true, ''])

    const revocation = signEvent(
      makeRevocation({ fleet: t.owner, keys: [publicKeyOf(f.agentSk)] }, now()),
      t.ownerSk,
    )
    expect(await publish(f.owner, revocation)).toEqual(['OK', revocation.id, true, ''])
    expect(await agent.next((m) => m[0] === 'CLOSED')).toEqual([
      'CLOSED',
      'live',
      expect.stringMatching(/^restricted: revoked/),
    ])
    expect((await agent.waitClosed()).code).toBe(1008)

    // Its next events are refused, on any connection, and it cannot come back in.
    const after = signEvent(
      { kind: 9, created_at: now(), tags: [], content: 'still me?' },
      f.agentSk,
    )
    expect(await publish(f.owner, after)).toEqual([
      'OK',
      after.id,
      false,
      expect.stringMatching(/^restricted: revoked/),
    ])
    const again = await t.connect()
    expect((await again.auth(t.url, f.agentSk))[3]).toMatch(/^restricted: revoked/)
    // The device above it is untouched.
    const device = await t.connect()
    expect((await device.auth(t.url, f.deviceSk))[2]).toBe(true)
  })

  it('cascades a device revocation to its agents and their connections', async () => {
    const t = await startTestHub()
    const f = await fleet(t)
    const agent = await t.connect()
    await agent.auth(t.url, f.agentSk)
    const revocation = signEvent(
      makeRevocation({ fleet: t.owner, grants: [f.deviceGrant.id] }, now()),
      t.ownerSk,
    )
    expect((await publish(f.owner, revocation))[2]).toBe(true)
    expect((await agent.waitClosed()).code).toBe(1008)
    const e = signEvent({ kind: 9, created_at: now(), tags: [], content: 'x' }, f.agentSk)
    expect((await publish(f.owner, e))[3]).toMatch(/^restricted: revoked/)
  })

  it('refuses grants from keys without authority; revocations without authority revoke nothing', async () => {
    const t = await startTestHub()
    const f = await fleet(t)
    const stranger = generateSecretKey()
    // An agent tries to revoke its device; a device tries to revoke the owner.
    const byAgent = signEvent(
      makeRevocation({ fleet: t.owner, grants: [f.deviceGrant.id] }, now()),
      f.agentSk,
    )
    // The device's grant is known and its chain never changes: the agent could never stand
    // above it, so the revocation is refused rather than kept.
    expect(await publish(f.owner, byAgent)).toEqual([
      'OK',
      byAgent.id,
      false,
      `restricted: no-authority: the signer has no authority over grant ${f.deviceGrant.id}`,
    ])
    const byDevice = signEvent(
      makeRevocation({ fleet: t.owner, keys: [t.owner] }, now()),
      f.deviceSk,
    )
    expect((await publish(f.owner, byDevice))[3]).toMatch(/^restricted: no-authority/)
    const selfMade = signGrant(
      { subject: publicKeyOf(stranger), role: 'owner', fleet: t.owner, parent: f.agentGrant.id },
      f.agentSk,
      stranger,
      now(),
    )
    expect((await publish(f.owner, selfMade))[3]).toMatch(/^restricted: no-authority/)
    // Nobody was admitted by any of it, and the device is still a member.
    const c = await t.connect()
    expect((await c.auth(t.url, stranger))[3]).toMatch(/^restricted: not-a-member/)
    expect((await (await t.connect()).auth(t.url, f.deviceSk))[2]).toBe(true)
  })

  it('lets a device publish its own chain before AUTH, but not a stranger', async () => {
    const t = await startTestHub()
    const deviceSk = generateSecretKey()
    const grant = signGrant(
      { subject: publicKeyOf(deviceSk), role: 'device', fleet: t.owner },
      t.ownerSk,
      deviceSk,
      now(),
    )
    const device = await t.connect()
    expect((await device.auth(t.url, deviceSk))[3]).toMatch(/^restricted: not-a-member/)
    expect(await publish(device, grant)).toEqual(['OK', grant.id, true, ''])
    expect((await device.auth(t.url, deviceSk))[2]).toBe(true)
    expect((await device.req('s', { kinds: [4140] })).events).toEqual([grant])

    const strangerSk = generateSecretKey()
    const strangerSubject = generateSecretKey()
    const strangerGrant = signGrant(
      { subject: publicKeyOf(strangerSubject), role: 'device', fleet: t.owner },
      strangerSk,
      strangerSubject,
      now(),
    )
    const stranger = await t.connect()
    expect((await publish(stranger, strangerGrant))[3]).toMatch(/^auth-required: /)
  })

  it('re-admits a key through a new grant after its grant was revoked', async () => {
    const t = await startTestHub()
    const f = await fleet(t)
    const rev = signEvent(
      makeRevocation({ fleet: t.owner, grants: [f.agentGrant.id] }, now()),
      f.deviceSk,
    )
    expect((await publish(f.owner, rev))[2]).toBe(true)
    // Replaying the old grant changes nothing.
    expect((await publish(f.owner, f.agentGrant))[3]).toMatch(/^duplicate: /)
    const c1 = await t.connect()
    expect((await c1.auth(t.url, f.agentSk))[3]).toMatch(/^restricted: revoked/)
    const fresh = signGrant(
      {
        subject: publicKeyOf(f.agentSk),
        role: 'agent',
        fleet: t.owner,
        parent: f.deviceGrant.id,
        kinds: [9],
      },
      f.deviceSk,
      f.agentSk,
      now() + 1,
    )
    expect((await publish(f.owner, fresh))[2]).toBe(true)
    const c2 = await t.connect()
    expect((await c2.auth(t.url, f.agentSk))[2]).toBe(true)
  })
})
