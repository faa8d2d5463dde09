// A revoked device's past: what it signed while it stood is history every reader tells the same
// way; what it signs after (or dates after its revocation) is nothing, and hubs take none of it.
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { makeChannelDefinition } from '../../src/events/channel-def.js'
import { makeChatMessage } from '../../src/events/chat.js'
import { publicKeyOf, signEvent, verifyEventSignature } from '../../src/events/event.js'
import { FleetState } from '../../src/grants/fleet-state.js'
import { signGrant } from '../../src/grants/grant.js'
import { makeRevocation } from '../../src/grants/revocation.js'

const t0 = 1_800_000_000

function fleet() {
  const founder = generateSecretKey()
  const phone = generateSecretKey()
  const fleetKey = publicKeyOf(founder)
  const state = new FleetState({ founder: fleetKey, verifySignature: verifyEventSignature })
  const grant = signGrant(
    { subject: publicKeyOf(phone), role: 'device', fleet: fleetKey },
    founder,
    phone,
    t0,
  )
  expect(state.admit(grant, t0).ok).toBe(true)
  const say = (text: string, at: number) =>
    signEvent(makeChatMessage({ channel: 'ops', text, fleet: fleetKey }, at), phone)
  const revoke = (at: number) =>
    state.admit(
      signEvent(makeRevocation({ fleet: fleetKey, keys: [publicKeyOf(phone)] }, at), founder),
      at,
    )
  return { say, revoke, state }
}

describe('history after a revocation (kith-grants: judged by the event date against the revocation)', () => {
  it('a reader takes what the device signed before its revocation, marked past; a hub does not', () => {
    const { say, revoke, state } = fleet()
    const before = say('@claude edit README.md', t0 + 10)
    expect(revoke(t0 + 100).ok).toBe(true)
    const now = t0 + 1000
    expect(state.admit(before, now, { history: true })).toMatchObject({ ok: true, past: true })
    // A hub judges standing now: the revoked key publishes nothing, whatever its date.
    const atHub = state.admit(before, now)
    expect(atHub.ok).toBe(false)
    if (!atHub.ok) expect(atHub.error.reason).toBe('revoked')
  })

  it('the attacker with the revoked key: anything dated at or after the revocation, or ahead of now, is refused even as history', () => {
    const { say, revoke, state } = fleet()
    expect(revoke(t0 + 100).ok).toBe(true)
    const now = t0 + 1000
    for (const at of [t0 + 100, t0 + 500, now + 3600]) {
      const a = state.admit(say('rm -rf', at), now, { history: true })
      expect(a.ok, String(at)).toBe(false)
    }
    // What it dates before its revocation is taken as history (readers cannot tell it from
    // what it really signed then), which is why hubs, judging standing now, refuse it at the
    // door: it never reaches a reader through an honest hub.
    const backdated = say('backdated', t0 + 50)
    expect(state.admit(backdated, now).ok).toBe(false)
  })

  it('a member in good standing is not marked past', () => {
    const { say, state } = fleet()
    const a = state.admit(say('hi', t0 + 10), t0 + 20, { history: true })
    expect(a).toMatchObject({ ok: true })
    expect(a.ok && a.past).toBeFalsy()
  })
})

describe("history in a private channel that lists the device's person, not the device", () => {
  // Bob (an owner) is listed in #ops; his laptop (a device under him) posted there, then was
  // revoked. Its messages while it stood are Bob's history: readers judge the laptop as Bob's at
  // the message's date, as they judge its grant then.
  function bobFleet() {
    const founder = generateSecretKey()
    const bob = generateSecretKey()
    const laptop = generateSecretKey()
    const fleetKey = publicKeyOf(founder)
    const state = new FleetState({ founder: fleetKey, verifySignature: verifyEventSignature })
    const admit = (e: ReturnType<typeof signEvent>, at: number) => state.admit(e, at)
    const bobGrant = signGrant(
      { subject: publicKeyOf(bob), role: 'owner', fleet: fleetKey },
      founder,
      bob,
      t0,
    )
    expect(admit(bobGrant, t0).ok).toBe(true)
    const laptopGrant = signGrant(
      { subject: publicKeyOf(laptop), role: 'device', fleet: fleetKey, parent: bobGrant.id },
      bob,
      laptop,
      t0,
    )
    expect(admit(laptopGrant, t0).ok).toBe(true)
    const def = signEvent(
      makeChannelDefinition(
        {
          channel: 'ops',
          fleet: fleetKey,
          creator: fleetKey,
          private: true,
          members: [fleetKey, publicKeyOf(bob)],
        },
        t0 + 1,
      ),
      founder,
    )
    expect(admit(def, t0 + 1).ok).toBe(true)
    const say = (text: string, at: number) =>
      signEvent(makeChatMessage({ channel: 'ops', text, fleet: fleetKey }, at), laptop)
    const revoke = (at: number) =>
      admit(
        signEvent(makeRevocation({ fleet: fleetKey, keys: [publicKeyOf(laptop)] }, at), bob),
        at,
      )
    return { say, revoke, state, laptopKey: publicKeyOf(laptop) }
  }

  it('a reader takes what the revoked laptop said in #ops while it stood, marked past', () => {
    const { say, revoke, state } = bobFleet()
    const before = say('deploying now', t0 + 10)
    expect(state.admit(before, t0 + 20)).toMatchObject({ ok: true })
    expect(revoke(t0 + 100).ok).toBe(true)
    const now = t0 + 1000
    expect(state.admit(before, now, { history: true })).toMatchObject({ ok: true, past: true })
    // A hub judges standing now and refuses it; so is anything the laptop dates after.
    expect(state.admit(before, now).ok).toBe(false)
    expect(state.admit(say('after', t0 + 200), now, { history: true }).ok).toBe(false)
  })

  it("the channel book judges the laptop as Bob's at a date before its revocation, not after", () => {
    const { revoke, state, laptopKey } = bobFleet()
    expect(revoke(t0 + 100).ok).toBe(true)
    expect(state.channels.isMember(laptopKey, 'ops', t0 + 10, t0 + 10)).toBe(true)
    expect(state.channels.isMember(laptopKey, 'ops', t0 + 1000)).toBe(false)
    expect(state.channels.isMember(laptopKey, 'ops', t0 + 200, t0 + 200)).toBe(false)
  })
})
