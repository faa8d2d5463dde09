import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf, signEvent, verifyEventSignature } from '../../src/events/event.js'
import { makeGrant } from '../../src/grants/grant.js'
import { makeRevocation } from '../../src/grants/revocation.js'
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
      for (const s of c.steps) if (s.expect !== 'accepted') codes.add(s.expect.rejected)
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
        'unknown-target',
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
        const r = v.add(step.event, { now: vectors.now })
        const got = r.status === 'accepted' ? 'accepted' : { rejected: r.code }
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

  it('holds out-of-order events as pending and resolves them when the parent arrives', () => {
    const ownerSk = generateSecretKey()
    const deviceSk = generateSecretKey()
    const g1 = signEvent(
      makeGrant({ subject: publicKeyOf(ownerSk), role: 'owner', fleet: founder }, now),
      founderSk,
    )
    const g2 = signEvent(
      makeGrant(
        { subject: publicKeyOf(deviceSk), role: 'device', fleet: founder, parent: g1.id },
        now,
      ),
      ownerSk,
    )
    const rev = signEvent(
      makeRevocation({ fleet: founder, keys: [publicKeyOf(deviceSk)] }, now),
      ownerSk,
    )
    const verifier = v()
    expect(verifier.add(rev, { keepPending: true })).toMatchObject({
      status: 'pending',
      code: 'unknown-target',
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

  it('decides the same whatever order the same events arrive in', () => {
    const c = vectors.cases.find((x) => x.name.startsWith('revoking a grant cascades'))!
    const events = c.steps.map((s) => s.event)
    const orders = [events, [...events].reverse(), [events[3]!, events[0]!, events[2]!, events[1]!]]
    const results = orders.map((order) => {
      const verifier = new GrantVerifier({
        founder: vectors.founder,
        verifySignature: verifyEventSignature,
      })
      for (const e of order) verifier.add(e, { keepPending: true })
      return ['O', 'D', 'A'].map(
        (k) => verifier.authorize(vectors.keys[k]!, { now: vectors.now }).ok,
      )
    })
    expect(results).toEqual([
      [false, false, false],
      [false, false, false],
      [false, false, false],
    ])
  })

  it('bumps its generation on every change, not on lookups', () => {
    const verifier = v()
    const g0 = verifier.generation
    const g = signEvent(
      makeGrant({ subject: publicKeyOf(generateSecretKey()), role: 'device', fleet: founder }, now),
      founderSk,
    )
    verifier.add(g)
    expect(verifier.generation).toBe(g0 + 1)
    verifier.authorize(founder, { now })
    verifier.add(g)
    expect(verifier.generation).toBe(g0 + 1)
  })
})
