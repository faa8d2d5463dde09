import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { KithError } from '../../src/errors.js'
import { makeAgentPolicy, parseAgentPolicy, parseQuorum } from '../../src/events/agent-policy.js'
import { publicKeyOf, signEvent, verifyEventSignature } from '../../src/events/event.js'
import { policyAt, policyRefusal } from '../../src/grants/agent-policy-standing.js'
import { signGrant, type Role } from '../../src/grants/grant.js'
import { makeRevocation } from '../../src/grants/revocation.js'
import { GrantVerifier } from '../../src/grants/verifier.js'

const t0 = 1_800_000_000

/** Founder fay; alice with laptop and phone, whose laptop added the agent; bob with his laptop. */
function fleet() {
  const key = () => {
    const sk = generateSecretKey()
    return { sk, pk: publicKeyOf(sk) }
  }
  const k = {
    fay: key(),
    alice: key(),
    laptop: key(),
    phone: key(),
    agent: key(),
    bob: key(),
    bobLaptop: key(),
  }
  const v = new GrantVerifier({ founder: k.fay.pk, verifySignature: verifyEventSignature })
  const grant = (
    issuer: { sk: Uint8Array },
    subject: { pk: string; sk: Uint8Array },
    role: Role,
    extra: { deleg?: boolean; parent?: string } = {},
  ) => {
    const e = signGrant(
      { subject: subject.pk, role, fleet: k.fay.pk, ...extra },
      issuer.sk,
      subject.sk,
      t0,
    )
    expect(v.add(e).status).toBe('accepted')
    return e.id
  }
  const gAlice = grant(k.fay, k.alice, 'owner')
  const gLaptop = grant(k.alice, k.laptop, 'device', { deleg: true, parent: gAlice })
  grant(k.alice, k.phone, 'device', { parent: gAlice })
  grant(k.laptop, k.agent, 'agent', { parent: gLaptop })
  const gBob = grant(k.fay, k.bob, 'owner')
  grant(k.bob, k.bobLaptop, 'device', { parent: gBob })
  return { v, k }
}

const policy = (
  agent: string,
  fleetKey: string,
  at: number,
  extra: Partial<Parameters<typeof makeAgentPolicy>[0]> = {},
) =>
  makeAgentPolicy(
    { agent, fleet: fleetKey, allow: 'fleet', approvers: 'fleet', permissions: 'ask', ...extra },
    at,
  )

describe('agent policies (kind 34151)', () => {
  it('round-trips, and refuses out-of-bounds quorums and unknown tool kinds', () => {
    const { k } = fleet()
    const e = signEvent(
      policy(k.agent.pk, k.fay.pk, t0 + 10, { quorum: { n: 2, for: ['execute', 'edit'] } }),
      k.laptop.sk,
    )
    const p = parseAgentPolicy(e)
    expect(p).toMatchObject({
      agent: k.agent.pk,
      author: k.laptop.pk,
      allow: 'fleet',
      approvers: 'fleet',
      permissions: 'ask',
      quorum: { n: 2, for: ['execute', 'edit'] },
    })
    expect(e.tags).toEqual([
      ['d', k.agent.pk],
      ['p', k.agent.pk],
      ['fleet', k.fay.pk],
    ])
    const bad = (q: unknown) => () => parseQuorum(q, 'q')
    expect(bad({ n: 10, for: ['execute'] })).toThrow(KithError)
    expect(bad({ n: 0, for: ['execute'] })).toThrow(/1 to 9/)
    expect(bad({ n: 2, for: ['shell'] })).toThrow(/ACP tool kinds/)
    expect(bad({ n: 2, for: [] })).toThrow(/ACP tool kinds/)
    // One person is what every card asks anyway: no quorum.
    expect(parseQuorum({ n: 1, for: ['execute'] }, 'q')).toBeUndefined()
    const forged = signEvent(
      {
        ...policy(k.agent.pk, k.fay.pk, t0),
        content: '{"allow":"fleet","approvers":"fleet","permissions":"yolo"}',
      },
      k.laptop.sk,
    )
    expect(() => parseAgentPolicy(forged)).toThrow(/permissions/)
  })

  it("counts a policy only from a device of the agent's owner, at its date", () => {
    const { v, k } = fleet()
    const at = t0 + 10
    const by = (sk: Uint8Array) => signEvent(policy(k.agent.pk, k.fay.pk, at), sk)
    expect(policyRefusal(by(k.laptop.sk), v)).toBeUndefined()
    // Another device of the same person, and the person's own key.
    expect(policyRefusal(by(k.phone.sk), v)).toBeUndefined()
    expect(policyRefusal(by(k.alice.sk), v)).toBeUndefined()
    // Another person's device, another person, the agent itself: forged.
    expect(policyRefusal(by(k.bobLaptop.sk), v)).toMatch(/not a device of the agent's owner/)
    expect(policyRefusal(by(k.bob.sk), v)).toMatch(/not a device of the agent's owner/)
    expect(policyRefusal(by(k.agent.sk), v)).toMatch(/not a device of the agent's owner/)
    // Of another fleet.
    expect(policyRefusal(signEvent(policy(k.agent.pk, k.bob.pk, at), k.laptop.sk), v)).toMatch(
      /another fleet/,
    )
    // Signed by the phone before it was revoked, it stays the rule of its time; after, not.
    const rev = signEvent(
      makeRevocation({ keys: [k.phone.pk], fleet: k.fay.pk }, t0 + 100),
      k.alice.sk,
    )
    expect(v.add(rev).status).toBe('accepted')
    expect(policyRefusal(by(k.phone.sk), v)).toBeUndefined()
    expect(policyRefusal(signEvent(policy(k.agent.pk, k.fay.pk, t0 + 200), k.phone.sk), v)).toMatch(
      /not a device of the agent's owner/,
    )
  })

  it('picks the version in force at a date, skipping forged ones', () => {
    const { v, k } = fleet()
    const v1 = signEvent(policy(k.agent.pk, k.fay.pk, t0 + 10), k.laptop.sk)
    const v2 = signEvent(
      policy(k.agent.pk, k.fay.pk, t0 + 50, { quorum: { n: 2, for: ['execute'] } }),
      k.phone.sk,
    )
    // Bob's laptop forges a newer one that drops the quorum.
    const forged = signEvent(policy(k.agent.pk, k.fay.pk, t0 + 60), k.bobLaptop.sk)
    const all = [forged, v2, v1]
    expect(policyAt(all, k.agent.pk, t0 + 5, v)).toBeUndefined()
    expect(policyAt(all, k.agent.pk, t0 + 10, v)?.id).toBe(v1.id)
    expect(policyAt(all, k.agent.pk, t0 + 49, v)?.id).toBe(v1.id)
    expect(policyAt(all, k.agent.pk, t0 + 50, v)?.id).toBe(v2.id)
    expect(policyAt(all, k.agent.pk, t0 + 70, v)?.quorum).toEqual({ n: 2, for: ['execute'] })
    expect(policyAt(all, k.bob.pk, t0 + 70, v)).toBeUndefined()
  })
})
