import { describe, expect, it } from 'vitest'
import { makeEnvelope } from '../../src/events/e2e-envelope.js'
import { openSealed, sealTemplate } from '../../src/events/e2e-seal.js'
import {
  defaultRotateSeconds,
  makeFleetSetting,
  parseRotatePeriod,
  rotateEveryOf,
} from '../../src/events/e2e-setting.js'
import { publicKeyOf, signEvent } from '../../src/events/event.js'
import { fleetSealing } from '../../src/grants/e2e-sealing.js'
import { Keyring, MemoryKeyringStore } from '../../src/grants/e2e-keyring.js'
import { FleetState } from '../../src/grants/fleet-state.js'
import { isKithError } from '../../src/errors.js'
import { newSecret, signTestGrant } from '../helpers/secrets.js'

// kith-e2e/1, "Periodic rotation" (issue 29, item 7): one leaked epoch key opens a bounded window.

const t0 = 1_750_000_000
const day = 86_400
const random = (n: number) => crypto.getRandomValues(new Uint8Array(n))

function fleet() {
  const founder = newSecret()
  const fleetKey = publicKeyOf(founder)
  const [a1, a2] = [newSecret(), newSecret()]
  const state = new FleetState({ founder: fleetKey, verifySignature: () => true })
  for (const sk of [a1, a2])
    expect(
      state.admit(
        signTestGrant({ subject: publicKeyOf(sk), role: 'device', fleet: fleetKey }, founder, t0),
        t0,
      ).ok,
    ).toBe(true)
  return { founder, fleetKey, a1, a2, state }
}

const chat = (text: string, at: number) => ({
  kind: 9,
  created_at: at,
  tags: [['h', 'ops']],
  content: text,
})

describe('periodic rotation', () => {
  it('attacker: a leaked epoch key does not open what is sealed once the period has passed', () => {
    const f = fleet()
    const ring = new Keyring(new MemoryKeyringStore(), f.state, publicKeyOf(f.a1))
    const every = 7 * day
    const first = ring.epochFor('ops', t0, random, every)
    expect(first.plan.action).toBe('create')
    // Within the period: the same epoch.
    expect(ring.epochFor('ops', t0 + 6 * day, random, every).epoch.id).toBe(first.epoch.id)
    // Past it: a new one, although nobody left.
    const later = ring.epochFor('ops', t0 + every, random, every)
    expect(later.plan).toMatchObject({ action: 'rotate', number: 1, aged: true })
    expect(later.epoch.id).not.toBe(first.epoch.id)
    const sealed = signEvent(
      sealTemplate(chat('after the period', t0 + every), publicKeyOf(f.a1), later.epoch),
      f.a1,
    )
    // The thief holds only the first epoch's key.
    const leaked = (id: string) => (id === first.epoch.id ? first.epoch : undefined)
    let refusal: unknown
    try {
      openSealed(sealed, leaked)
    } catch (err) {
      refusal = err
    }
    expect(isKithError(refusal) && refusal.reason).toBe('no-key')
    // Every member was sent the new one.
    expect([...later.to].sort()).toEqual([publicKeyOf(f.a1), publicKeyOf(f.a2)].sort())
  })

  it('a receiver ages an epoch from the envelope that brought it, and a later envelope does not make it younger', () => {
    const f = fleet()
    const sender = new Keyring(new MemoryKeyringStore(), f.state, publicKeyOf(f.a1))
    const made = sender.epochFor('ops', t0, random, 7 * day)
    const envelope = (at: number) =>
      signEvent(makeEnvelope(made.epoch, publicKeyOf(f.a2), f.a1, f.fleetKey, at), f.a1)
    const receiver = new Keyring(new MemoryKeyringStore(), f.state, publicKeyOf(f.a2))
    receiver.takeEnvelope(envelope(t0), () => f.a2)
    receiver.takeEnvelope(envelope(t0 + 3 * day), () => f.a2)
    expect(receiver.store.epoch(made.epoch.id)?.since).toBe(t0)
    expect(receiver.epochFor('ops', t0 + 7 * day, random, 7 * day).plan.action).toBe('rotate')
  })

  it('the period is the fleet setting’s, a week by default, bounded; the CLI reads 7d, 12h, 90m', () => {
    const f = fleet()
    const on = (period?: number) =>
      signEvent(makeFleetSetting(f.fleetKey, true, t0, period), f.founder)
    expect(fleetSealing([on()], f.state.channels, f.fleetKey, t0).rotateEvery).toBe(
      defaultRotateSeconds,
    )
    expect(fleetSealing([on(12 * 3600)], f.state.channels, f.fleetKey, t0).rotateEvery).toBe(
      12 * 3600,
    )
    // A period out of bounds (a member forcing a rotation on every send) is the default.
    const tooShort = { tags: [['rotate', '5']] }
    expect(rotateEveryOf(tooShort)).toBe(defaultRotateSeconds)
    expect(parseRotatePeriod('7d')).toBe(7 * day)
    expect(parseRotatePeriod('12h')).toBe(12 * 3600)
    expect(parseRotatePeriod('90m')).toBe(90 * 60)
    expect(() => parseRotatePeriod('5m')).toThrow(/between 1h and 365d/)
    expect(() => parseRotatePeriod('soon')).toThrow(/like 7d/)
  })
})
