import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import {
  publicKeyOf,
  signEvent,
  verifyEventSignature,
  type NostrEvent,
} from '../../src/events/event.js'
import { signGrant } from '../../src/grants/grant.js'
import { makeRevocation } from '../../src/grants/revocation.js'
import { FleetState } from '../../src/grants/fleet-state.js'
import { GrantVerifier } from '../../src/grants/verifier.js'
import { vectors } from './vectors.js'

function verifierFor() {
  return new GrantVerifier({
    founder: vectors.founder,
    maxDepth: vectors.maxDepth,
    skewSeconds: vectors.skewSeconds,
    verifySignature: verifyEventSignature,
  })
}

describe('grant vectors (test/vectors/grants.json)', () => {
  it('has a case for every reason code the spec names', () => {
    const codes = new Set<string>()
    for (const c of vectors.cases) {
      for (const s of c.steps)
        if (typeof s.expect === 'object' && 'rejected' in s.expect) codes.add(s.expect.rejected)
      for (const q of c.queries) if (q.expect !== 'ok') codes.add(q.expect)
    }
    expect([...codes].sort()).toEqual(
      [
        'bad-signature',
        'channel-not-allowed',
        'cycle',
        'expired',
        'kind-not-allowed',
        'malformed',
        'missing-parent',
        'no-authority',
        'not-a-member',
        'not-yet-valid',
        'parent-mismatch',
        'revoked',
        'self-grant',
        'too-deep',
        'unknown-parent',
        'bad-proof',
        'wider-channels',
        'wider-kinds',
        'wider-window',
        'wrong-fleet',
      ].sort(),
    )
  })

  for (const c of vectors.cases) {
    it(c.name, () => {
      const v = verifierFor()
      c.steps.forEach((step, i) => {
        const r = v.add(step.event)
        const got =
          r.status !== 'accepted' ? { rejected: r.code } : r.held ? { held: true } : 'accepted'
        expect({ step: i, got }).toEqual({ step: i, got: step.expect })
      })
      for (const q of c.queries) {
        const d = v.authorize(vectors.keys[q.key]!, {
          now: q.at ?? vectors.now,
          ...(q.kind === undefined ? {} : { kind: q.kind }),
          ...(q.channel === undefined ? {} : { channel: q.channel }),
        })
        expect({ q, got: d.ok ? 'ok' : d.code }).toEqual({ q, got: q.expect })
      }
    })
  }
})

describe('GrantVerifier', () => {
  const founderSk = generateSecretKey()
  const founder = publicKeyOf(founderSk)
  const now = 1_800_000_000
  const v = () => new GrantVerifier({ founder, verifySignature: verifyEventSignature })

  it('holds grants until their parent arrives, and applies revocations to grants that come later', () => {
    const ownerSk = generateSecretKey()
    const deviceSk = generateSecretKey()
    const g1 = signGrant(
      { subject: publicKeyOf(ownerSk), role: 'owner', fleet: founder },
      founderSk,
      ownerSk,
      now,
    )
    const g2 = signGrant(
      { subject: publicKeyOf(deviceSk), role: 'device', fleet: founder, parent: g1.id },
      ownerSk,
      deviceSk,
      now,
    )
    const rev = signEvent(
      makeRevocation({ fleet: founder, keys: [publicKeyOf(deviceSk)] }, now),
      ownerSk,
    )
    const verifier = v()
    // The revoker's own grant is not known yet: held.
    expect(verifier.add(rev, { keepPending: true })).toMatchObject({
      status: 'pending',
      code: 'not-a-member',
    })
    expect(verifier.add(g2, { keepPending: true })).toMatchObject({
      status: 'pending',
      code: 'unknown-parent',
    })
    expect(verifier.pendingCount).toBe(2)
    expect(verifier.add(g1, { keepPending: true })).toEqual({ status: 'accepted' })
    expect(verifier.pendingCount).toBe(0)
    expect(verifier.authorize(publicKeyOf(deviceSk), { now })).toMatchObject({
      ok: false,
      code: 'revoked',
    })
    expect(verifier.authorize(publicKeyOf(ownerSk), { now })).toMatchObject({
      ok: true,
      role: 'owner',
    })
  })

  it('keeps a held revocation without touching any decision, and one signer holds a bounded number', () => {
    const ownerSk = generateSecretKey()
    const verifier = new GrantVerifier({
      founder,
      verifySignature: verifyEventSignature,
      heldTargetsPerSigner: 3,
    })
    verifier.add(
      signGrant(
        { subject: publicKeyOf(ownerSk), role: 'owner', fleet: founder },
        founderSk,
        ownerSk,
        now,
      ),
    )
    const revoke = (keys: string[], at = now) =>
      signEvent(makeRevocation({ fleet: founder, keys }, at), ownerSk)
    const unknown = () => publicKeyOf(generateSecretKey())
    const generation = verifier.generation
    const x = unknown()
    // Named twice, counted once; nothing known is revoked, so no cached decision is dropped.
    expect(verifier.add(revoke([x, x]))).toEqual({ status: 'accepted', held: true })
    expect(verifier.generation).toBe(generation)
    expect(verifier.add(revoke([unknown(), unknown()]))).toEqual({ status: 'accepted', held: true })
    expect(verifier.add(revoke([unknown()]))).toMatchObject({
      status: 'rejected',
      code: 'too-many-held',
    })
    // Its own key, and the founder, it could never stand above.
    expect(verifier.add(revoke([publicKeyOf(ownerSk)]))).toMatchObject({ code: 'no-authority' })
  })

  it('keeps what it cannot place bounded and for a day at most; a node stores it only once placed', () => {
    const verifier = new GrantVerifier({
      founder,
      verifySignature: verifyEventSignature,
      maxPending: 3,
      pendingMaxAgeSeconds: 60,
    })
    verifier.recordAccepted = true
    // Grants naming parents nobody has: what a stranger writing to a linked relay can send.
    const orphan = () => {
      const sk = generateSecretKey()
      return signGrant(
        { subject: publicKeyOf(sk), role: 'device', fleet: founder, parent: 'ab'.repeat(32) },
        generateSecretKey(),
        sk,
        now,
      )
    }
    for (let i = 0; i < 10; i++) verifier.add(orphan(), { keepPending: true, receivedAt: now })
    expect(verifier.pendingCount).toBe(3)
    // A minute later the old ones are gone as the next arrives.
    verifier.add(orphan(), { keepPending: true, receivedAt: now + 61 })
    expect(verifier.pendingCount).toBe(1)
    // One that can be placed once its parent comes is promoted for the node to store.
    const ownerSk = generateSecretKey()
    const deviceSk = generateSecretKey()
    const parent = signGrant(
      { subject: publicKeyOf(ownerSk), role: 'owner', fleet: founder },
      founderSk,
      ownerSk,
      now,
    )
    const child = signGrant(
      { subject: publicKeyOf(deviceSk), role: 'device', fleet: founder, parent: parent.id },
      ownerSk,
      deviceSk,
      now,
    )
    const state = new FleetState({ founder, verifySignature: verifyEventSignature })
    state.grants.recordAccepted = true
    const waiting = state.admit(child, now, { keepPending: true })
    expect(waiting).toMatchObject({ ok: true, store: false })
    expect(state.admit(parent, now, { keepPending: true })).toMatchObject({ ok: true, store: true })
    expect(state.grants.drainPromoted().map((e) => e.id)).toEqual([child.id])
  })

  it('checks every channel of an event, not only the first', () => {
    const deviceSk = generateSecretKey()
    const verifier = v()
    verifier.add(
      signGrant(
        { subject: publicKeyOf(deviceSk), role: 'device', fleet: founder, channels: ['ops'] },
        founderSk,
        deviceSk,
        now,
      ),
    )
    const device = publicKeyOf(deviceSk)
    expect(verifier.authorize(device, { now, channels: ['ops'] }).ok).toBe(true)
    expect(verifier.authorize(device, { now, channels: ['ops', 'finance'] })).toMatchObject({
      ok: false,
      code: 'channel-not-allowed',
    })
  })

  it('bumps its generation on every change, not on lookups', () => {
    const verifier = v()
    const g0 = verifier.generation
    const subjectSk = generateSecretKey()
    const g = signGrant(
      { subject: publicKeyOf(subjectSk), role: 'device', fleet: founder },
      founderSk,
      subjectSk,
      now,
    )
    verifier.add(g)
    expect(verifier.generation).toBe(g0 + 1)
    verifier.authorize(founder, { now })
    verifier.add(g)
    expect(verifier.generation).toBe(g0 + 1)
  })
})

describe('decisions depend only on the set of events (every permutation)', () => {
  /** Every ordering of `items` (n! of them). */
  function* permutations<T>(items: readonly T[]): Generator<T[]> {
    if (items.length <= 1) {
      yield [...items]
      return
    }
    for (let i = 0; i < items.length; i++) {
      const rest = [...items.slice(0, i), ...items.slice(i + 1)]
      for (const p of permutations(rest)) yield [items[i]!, ...p]
    }
  }

  const stateOf = (events: readonly NostrEvent[], keys: readonly string[]) => {
    const verifier = new GrantVerifier({
      founder: vectors.founder,
      verifySignature: verifyEventSignature,
    })
    // Signatures were checked once when the vectors were made; the structure is what varies.
    for (const e of events) verifier.add(e, { keepPending: true, verified: true })
    return keys.map((k) => {
      const d = verifier.authorize(vectors.keys[k]!, { now: vectors.now })
      return d.ok ? 'ok' : d.code
    })
  }

  const ids = (events: readonly NostrEvent[]) => events.map((e) => e.id)

  it('a cascading revocation: all 24 orders of 4 events', () => {
    const c = vectors.cases.find(
      (x) => x.name === 'revoking a grant cascades to everything beneath',
    )!
    const events = c.steps.map((s) => s.event)
    const keys = Object.keys(vectors.keys)
    const expected = stateOf(events, keys)
    let n = 0
    for (const order of permutations(events)) {
      expect({ order: ids(order), state: stateOf(order, keys) }).toEqual({
        order: ids(order),
        state: expected,
      })
      n++
    }
    expect(n).toBe(24)
  })

  it('"A revokes X" and "the founder revokes A" race: all 720 orders of 6 events', () => {
    // F admits A (admin); A admits X; X enrols a device; the founder also admits X directly;
    // A revokes X's key; the founder revokes A's key. Whatever order two hubs see these in,
    // they must end in the same state: A out, X in (through the founder's grant), X's device
    // out (its chain runs through A's grant of X).
    const c = vectors.cases.find(
      (x) => x.name === "a removed admin's revocation never reaches past the grants it stood above",
    )!
    const events = c.steps.map((s) => s.event)
    const keys = Object.keys(vectors.keys)
    const expected = stateOf(events, keys)
    expect(Object.fromEntries(keys.map((k, i) => [k, expected[i]]))).toMatchObject({
      O: 'revoked',
      O2: 'ok',
      D2: 'revoked',
    })
    let n = 0
    for (const order of permutations(events)) {
      expect({ order: ids(order), state: stateOf(order, keys) }).toEqual({
        order: ids(order),
        state: expected,
      })
      n++
    }
    expect(n).toBe(720)
  })
})
