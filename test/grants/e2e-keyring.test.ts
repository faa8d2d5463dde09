import { describe, expect, it } from 'vitest'
import { maxEpochNumber, newEpoch, type Epoch } from '../../src/events/e2e-epoch.js'
import { makeEnvelope, parseEnvelopeHead } from '../../src/events/e2e-envelope.js'
import { sealPlan } from '../../src/events/e2e-rotation.js'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { Keyring, MemoryKeyringStore } from '../../src/grants/e2e-keyring.js'
import { FleetState } from '../../src/grants/fleet-state.js'
import { newSecret, signTestGrant } from '../helpers/secrets.js'

const now = 1_750_000_000
const t0 = now - 1000
const random = (n: number) => crypto.getRandomValues(new Uint8Array(n))

/** founder → alice (owner) → her devices a1, v; founder → mallory (owner) → her device m. */
function fleet() {
  const founder = newSecret()
  const fleet = publicKeyOf(founder)
  const [alice, a1, v, mallory, m, outsider] = Array.from({ length: 6 }, newSecret) as [
    Uint8Array,
    Uint8Array,
    Uint8Array,
    Uint8Array,
    Uint8Array,
    Uint8Array,
  ]
  const pk = publicKeyOf
  const gAlice = signTestGrant({ subject: pk(alice), role: 'owner', fleet }, founder, t0)
  const gMallory = signTestGrant({ subject: pk(mallory), role: 'owner', fleet }, founder, t0)
  const device = (sk: Uint8Array, owner: Uint8Array, parent: NostrEvent) =>
    signTestGrant({ subject: pk(sk), role: 'device', parent: parent.id, fleet }, owner, t0)
  const grants = {
    a1: device(a1, alice, gAlice),
    v: device(v, alice, gAlice),
    m: device(m, mallory, gMallory),
  }
  const state = (withV = true) => {
    const s = new FleetState({ founder: fleet, verifySignature: () => true })
    for (const g of [gAlice, gMallory, grants.a1, grants.m, ...(withV ? [grants.v] : [])])
      expect(s.admit(g, now).ok).toBe(true)
    return s
  }
  /** An envelope that names `epoch` for `to` but carries another key (only `to` could tell). */
  const junk = (epoch: Epoch, from: Uint8Array, to: string, at = now) => {
    const t = makeEnvelope(newEpoch(epoch.channel, epoch.number, random), to, from, fleet, at)
    t.tags = t.tags.map((x) => (x[0] === 'epoch' ? ['epoch', epoch.id, String(epoch.number)] : x))
    return signEvent(t, from)
  }
  return { founder, fleet, alice, a1, v, mallory, m, outsider, grants, state, junk }
}

describe('keyring: holders and epoch numbers (kith-e2e/1, item 5 of issue 29)', () => {
  it("attacker: a member's junk envelope claiming V holds the epoch does not keep it from V", () => {
    const f = fleet()
    const state = f.state(false)
    const ring = new Keyring(new MemoryKeyringStore(), state, publicKeyOf(f.a1))
    const first = ring.epochFor('ops', now, random)
    expect(first.plan.action).toBe('create')
    // V is paired after the epoch went out; Mallory claims, with junk, that V already holds it.
    expect(state.admit(f.grants.v, now).ok).toBe(true)
    const claim = f.junk(first.epoch, f.m, publicKeyOf(f.v))
    expect(ring.takeEnvelope(claim, () => undefined)).toBeUndefined()
    const next = ring.epochFor('ops', now, random)
    expect(next.plan.action).toBe('use')
    expect(next.to).toEqual([publicKeyOf(f.v)])
    // And V itself, handed the junk, is not a holder in its own view: it takes the real key next.
    const vRing = new Keyring(new MemoryKeyringStore(), state, publicKeyOf(f.v))
    expect(() => vRing.takeEnvelope(claim, () => f.v)).toThrow(/not the key of epoch/)
    expect(vRing.store.holdersOf('ops').get(first.epoch.id)?.sure.has(publicKeyOf(f.v))).not.toBe(
      true,
    )
  })

  it('attacker: an envelope to a non-member does not force a rotation on every send', () => {
    const f = fleet()
    const ring = new Keyring(new MemoryKeyringStore(), f.state(), publicKeyOf(f.a1))
    const { epoch } = ring.epochFor('ops', now, random)
    const toOutsider = signEvent(
      makeEnvelope(epoch, publicKeyOf(f.outsider), f.m, f.fleet, now),
      f.m,
    )
    ring.takeEnvelope(toOutsider, () => undefined)
    expect(ring.epochFor('ops', now, random).plan.action).toBe('use')
  })

  it("attacker: a non-member's envelope counts no holders and gives no key", () => {
    const f = fleet()
    const ring = new Keyring(new MemoryKeyringStore(), f.state(), publicKeyOf(f.a1))
    const { epoch } = ring.epochFor('ops', now, random)
    const forged = signEvent(
      makeEnvelope(epoch, publicKeyOf(f.a1), f.outsider, f.fleet, now),
      f.outsider,
    )
    expect(() => ring.takeEnvelope(forged, () => f.a1)).toThrow(/not a member/)
    expect(ring.store.holdersOf('ops').get(epoch.id)?.holders.has(publicKeyOf(f.outsider))).toBe(
      false,
    )
  })

  it('attacker: an epoch number past the bound is malformed; at the bound, rotation still seals', () => {
    const f = fleet()
    const huge = newEpoch('ops', 0, random)
    const t = makeEnvelope(huge, publicKeyOf(f.a1), f.m, f.fleet, now)
    t.tags = t.tags.map((x) => (x[0] === 'epoch' ? ['epoch', huge.id, String(2 ** 53 - 1)] : x))
    expect(() => parseEnvelopeHead(signEvent(t, f.m))).toThrow(/malformed|an envelope needs/)
    const atBound = { id: 'aa', number: maxEpochNumber, holders: new Set(['gone']) }
    const plan = sealPlan(
      [atBound],
      ['a'],
      (k) => k === 'a',
      () => false,
    )
    expect(plan).toEqual({
      action: 'rotate',
      number: maxEpochNumber,
      removed: ['gone'],
      joined: [],
    })
    expect(newEpoch('ops', maxEpochNumber, random).number).toBe(maxEpochNumber)
    expect(() => newEpoch('ops', maxEpochNumber + 1, random)).toThrow(/epoch number/)
  })
})
