import { describe, expect, it } from 'vitest'
import { makeFleetSetting } from '../../src/events/e2e-setting.js'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { Kind } from '../../src/events/kinds.js'
import { ChannelBook } from '../../src/grants/channels.js'
import { FleetState } from '../../src/grants/fleet-state.js'
import { fleetSealing, sealingLapse, settingSkewSeconds } from '../../src/grants/e2e-sealing.js'
import { makeRevocation } from '../../src/grants/revocation.js'
import { GrantVerifier } from '../../src/grants/verifier.js'
import { newSecret, signTestGrant } from '../helpers/secrets.js'

const now = 1_750_000_000
const t0 = now - 1000

/** founder → bob (admin, owner with deleg), founder → carol (owner, not an admin). */
function fleet() {
  const founder = newSecret()
  const bob = newSecret()
  const carol = newSecret()
  const fleet = publicKeyOf(founder)
  const gBob = signTestGrant(
    { subject: publicKeyOf(bob), role: 'owner', deleg: true, name: 'bob', fleet },
    founder,
    t0,
  )
  const gCarol = signTestGrant(
    { subject: publicKeyOf(carol), role: 'owner', name: 'carol', fleet },
    founder,
    t0,
  )
  const book = (extra: NostrEvent[] = []) => {
    const v = new GrantVerifier({ founder: fleet, verifySignature: () => true })
    for (const e of [gBob, gCarol, ...extra]) v.add(e, { verified: true })
    return new ChannelBook(v)
  }
  const setting = (sk: Uint8Array, on: boolean, at: number) =>
    signEvent(makeFleetSetting(fleet, on, at), sk)
  const removeBob = (at: number) =>
    signEvent(makeRevocation({ fleet, keys: [publicKeyOf(bob)] }, at), founder)
  return { founder, bob, carol, fleet, gBob, gCarol, book, setting, removeBob }
}

describe('fleet sealing (kith-e2e/1, Turning it on)', () => {
  it('the newest setting of the founder or an admin decides; a non-admin decides nothing', () => {
    const f = fleet()
    const b = f.book()
    expect(fleetSealing([], b, f.fleet, now).on).toBe(false)
    const on = f.setting(f.founder, true, t0 + 10)
    const offByCarol = f.setting(f.carol, false, t0 + 20)
    const s = fleetSealing([on, offByCarol], b, f.fleet, now)
    expect(s.on).toBe(true)
    expect(s.ignored.map((i) => i.event.id)).toEqual([offByCarol.id])
    const off = f.setting(f.founder, false, t0 + 30)
    expect(fleetSealing([on, off], b, f.fleet, now).on).toBe(false)
    expect(sealingLapse(fleetSealing([on, off], b, f.fleet, now))).toMatch(/sealed, and stopped/)
    const otherFleet = signEvent(makeFleetSetting('a'.repeat(64), true, t0 + 40), f.founder)
    expect(fleetSealing([otherFleet], b, f.fleet, now).on).toBe(false)
  })

  it('attacker: removing the admin who turned sealing on does not turn it off', () => {
    const f = fleet()
    const on = f.setting(f.bob, true, t0 + 10)
    // Before: counted only while bob is an admin *now*, so his removal turned sealing off.
    expect(fleetSealing([on], f.book(), f.fleet, now).on).toBe(true)
    const removed = f.book([f.removeBob(t0 + 100)])
    const s = fleetSealing([on], removed, f.fleet, now)
    expect(s.on).toBe(true)
    expect(s.decidedBy?.id).toBe(on.id)
  })

  it('attacker: a removed admin cannot turn it off after the removal', () => {
    const f = fleet()
    const on = f.setting(f.founder, true, t0 + 10)
    const lateOff = f.setting(f.bob, false, t0 + 200)
    const s = fleetSealing([on, lateOff], f.book([f.removeBob(t0 + 100)]), f.fleet, now)
    expect(s.on).toBe(true)
    expect(s.ignored.map((i) => i.event.id)).toEqual([lateOff.id])
  })

  it('attacker: a setting dated ahead of the clock decides nothing', () => {
    const f = fleet()
    const on = f.setting(f.founder, true, t0 + 10)
    const ahead = f.setting(f.bob, false, now + settingSkewSeconds + 1)
    const s = fleetSealing([on, ahead], f.book(), f.fleet, now)
    expect(s.on).toBe(true)
    expect(s.ignored[0]?.reason).toMatch(/ahead/)
    // Within the skew it counts (clocks differ a little).
    const near = f.setting(f.bob, false, now + settingSkewSeconds)
    expect(fleetSealing([on, near], f.book(), f.fleet, now).on).toBe(false)
  })

  it('any order of the same settings gives one decision', () => {
    const f = fleet()
    const a = f.setting(f.founder, true, t0 + 10)
    const b = f.setting(f.bob, false, t0 + 10)
    const c = f.setting(f.bob, true, t0 + 5)
    const book = f.book()
    const first = fleetSealing([a, b, c], book, f.fleet, now)
    for (const order of [
      [c, b, a],
      [b, a, c],
      [a, c, b],
    ])
      expect(fleetSealing(order, book, f.fleet, now)).toEqual(first)
  })

  it('attacker: a hub or node that learns the removal first still takes the setting (found by fleet-properties)', () => {
    // Bob, an admin, turned sealing on; the founder removed him later. A fresh hub, or a node
    // catching up (authority first), refused bob's setting because he is not a member *now*,
    // so it never sealed, while the web app (which judges settings at their date) did.
    const f = fleet()
    const on = f.setting(f.bob, true, t0 + 10)
    const lateOff = f.setting(f.bob, false, t0 + 200)
    const admitted = (order: NostrEvent[]) => {
      const state = new FleetState({ founder: f.fleet, verifySignature: () => true })
      const kept = state
        .admitBatch(order, now)
        .filter((r) => r.admission.ok && r.event.kind === Kind.FleetSetting)
        .map((r) => r.event)
      return { ids: kept.map((e) => e.id), on: fleetSealing(kept, state.channels, f.fleet, now).on }
    }
    const grants = [f.gBob, f.gCarol]
    const removal = f.removeBob(t0 + 100)
    const settingFirst = admitted([...grants, on])
    const removalFirst = admitted([...grants, removal, on, lateOff])
    expect(settingFirst).toEqual({ ids: [on.id], on: true })
    // His setting from before the removal counts; the one he signed after it is refused.
    expect(removalFirst).toEqual({ ids: [on.id], on: true })
  })

  it('hubs and nodes refuse a setting dated ahead at admission', () => {
    const f = fleet()
    const state = new FleetState({ founder: f.fleet, verifySignature: () => true })
    const ahead = state.admit(f.setting(f.founder, true, now + settingSkewSeconds + 1), now)
    expect(ahead.ok ? 'admitted' : ahead.error.reason).toBe('future-dated')
    expect(state.admit(f.setting(f.founder, true, now), now).ok).toBe(true)
  })
})
