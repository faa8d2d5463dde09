import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { makeAgentPolicy, type AgentPolicyContent } from '../../src/events/agent-policy.js'
import { makeChatMessage } from '../../src/events/chat.js'
import {
  publicKeyOf,
  signEvent,
  verifyEventSignature,
  type NostrEvent,
} from '../../src/events/event.js'
import { makePermissionDecision } from '../../src/events/permission-decision.js'
import { makePermissionRequest } from '../../src/events/permission-request.js'
import { audit } from '../../src/grants/audit.js'
import { signGrant, type Role } from '../../src/grants/grant.js'
import { GrantVerifier } from '../../src/grants/verifier.js'

const t0 = 1_800_000_000

/**
 * A fleet founded by fay: alice hosts the agent `deploy` on her laptop; bob (laptop and phone)
 * and carol are its approvers; dan is a member who may prompt it but not approve.
 */
function fleet() {
  const key = () => {
    const sk = generateSecretKey()
    return { sk, pk: publicKeyOf(sk) }
  }
  const k = {
    fay: key(),
    alice: key(),
    laptop: key(),
    agent: key(),
    bob: key(),
    bobLaptop: key(),
    bobPhone: key(),
    carol: key(),
    carolLaptop: key(),
    dan: key(),
    danLaptop: key(),
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
  grant(k.laptop, k.agent, 'agent', { parent: gLaptop })
  for (const [person, devices] of [
    [k.bob, [k.bobLaptop, k.bobPhone]],
    [k.carol, [k.carolLaptop]],
    [k.dan, [k.danLaptop]],
  ] as const) {
    const g = grant(k.fay, person, 'owner')
    for (const d of devices) grant(person, d, 'device', { parent: g })
  }
  const fleetKey = k.fay.pk
  const policy = (at: number, content: Partial<AgentPolicyContent>, by = k.laptop.sk) =>
    signEvent(
      makeAgentPolicy(
        {
          agent: k.agent.pk,
          fleet: fleetKey,
          allow: 'fleet',
          approvers: [k.bob.pk, k.carol.pk],
          permissions: 'ask',
          ...content,
        },
        at,
      ),
      by,
    )
  const prompt = (by: Uint8Array, at: number, text: string, extra: string[][] = []) => {
    const t = makeChatMessage({ channel: 'ops', text, fleet: fleetKey, mentions: [k.agent.pk] }, at)
    return signEvent({ ...t, tags: [...t.tags, ...extra] }, by)
  }
  const card = (
    p: NostrEvent,
    at: number,
    toolKind: string,
    title: string,
    policyId: string,
    quorum?: { n: number; for: ('execute' | 'edit')[] },
  ) =>
    signEvent(
      makePermissionRequest(
        {
          channel: 'ops',
          fleet: fleetKey,
          prompt: p.id,
          prompter: p.pubkey,
          title,
          toolKind,
          options: [
            { optionId: 'allow', name: 'Allow', kind: 'allow_once' },
            { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
          ],
          expires: at + 300,
          toolCallId: `call-${at}`,
          sessionId: 's1',
          input: 'a'.repeat(64),
          nonce: `${at}`.padStart(16, '0'),
          policy: policyId,
          ...(quorum === undefined ? {} : { quorum }),
        },
        at,
      ),
      k.agent.sk,
    )
  const decide = (c: NostrEvent, by: Uint8Array, at: number, optionId = 'allow') =>
    signEvent(
      makePermissionDecision(
        { request: { id: c.id, channel: 'ops', agent: k.agent.pk }, fleet: fleetKey, optionId },
        at,
      ),
      by,
    )
  const reply = (p: NostrEvent, at: number, text: string) =>
    signEvent(
      makeChatMessage({ channel: 'ops', text, fleet: fleetKey, replyTo: { id: p.id } }, at),
      k.agent.sk,
    )
  return { v, k, policy, prompt, card, decide, reply }
}

const codes = (events: NostrEvent[], v: GrantVerifier) => audit(events, v).flags.map((f) => f.code)

describe('kith audit over signed histories', () => {
  it('passes an honest history: a quorum card allowed by two approvers, under its policy', () => {
    const { v, k, policy, prompt, card, decide, reply } = fleet()
    const p1 = policy(t0 + 10, { quorum: { n: 2, for: ['execute'] } })
    const q = prompt(k.bobLaptop.sk, t0 + 20, '@deploy ship it')
    const c = card(q, t0 + 21, 'execute', 'deploy prod', p1.id, { n: 2, for: ['execute'] })
    const events = [
      p1,
      q,
      c,
      decide(c, k.bobLaptop.sk, t0 + 22),
      decide(c, k.carolLaptop.sk, t0 + 23),
      reply(q, t0 + 25, 'permission: selected allow'),
    ]
    const report = audit(events, v)
    expect(report.flags).toEqual([])
    expect(report.turns).toHaveLength(1)
    const turn = report.turns[0]!
    expect(turn).toMatchObject({
      agent: k.agent.pk,
      prompt: q.id,
      prompter: { key: k.bobLaptop.pk, person: k.bob.pk },
      outcome: 'answered',
      durationSeconds: 5,
    })
    expect(turn.chain).toHaveLength(2)
    expect(turn.cards[0]).toMatchObject({
      toolKind: 'execute',
      title: 'deploy prod',
      input: 'a'.repeat(64),
      policy: p1.id,
      policyInForce: p1.id,
      outcome: 'allowed',
    })
    expect(turn.cards[0]!.decisions.map((d) => [d.person, d.approver])).toEqual([
      [k.bob.pk, true],
      [k.carol.pk, true],
    ])
  })

  it('flags a decision signed by a non-approver that the turn went on after', () => {
    const { v, k, policy, prompt, card, decide, reply } = fleet()
    const p1 = policy(t0 + 10, {})
    const q = prompt(k.danLaptop.sk, t0 + 20, '@deploy edit it')
    const c = card(q, t0 + 21, 'edit', 'edit main.ts', p1.id)
    // Dan's own allow, injected into the host's store as if it had counted.
    const events = [p1, q, c, decide(c, k.danLaptop.sk, t0 + 22), reply(q, t0 + 24, 'edited')]
    expect(codes(events, v)).toEqual(['non-approver-counted'])
    // The same history where an approver answered is clean.
    expect(codes([...events, decide(c, k.carolLaptop.sk, t0 + 23)], v)).toEqual([])
  })

  it('flags a quorum card that ran short, and two devices of one person as one', () => {
    const { v, k, policy, prompt, card, decide, reply } = fleet()
    const p1 = policy(t0 + 10, { quorum: { n: 2, for: ['execute'] } })
    const q = prompt(k.bobLaptop.sk, t0 + 20, '@deploy ship it')
    const c = card(q, t0 + 21, 'execute', 'deploy prod', p1.id, { n: 2, for: ['execute'] })
    const events = [
      p1,
      q,
      c,
      decide(c, k.bobLaptop.sk, t0 + 22),
      decide(c, k.bobPhone.sk, t0 + 23),
      reply(q, t0 + 25, 'permission: selected allow'),
    ]
    expect(codes(events, v)).toEqual(['quorum-short'])
    // An approver's reject ends it: the turn going on is then no shortfall.
    const rejected = [...events.slice(0, 4), decide(c, k.carolLaptop.sk, t0 + 23, 'reject')]
    const report = audit([...rejected, reply(q, t0 + 25, 'not run')], v)
    expect(report.flags).toEqual([])
    expect(report.turns[0]!.cards[0]!.outcome).toBe('rejected')
  })

  it('flags a card answered after its policy changed, and a card naming a forged policy', () => {
    const { v, k, policy, prompt, card, decide, reply } = fleet()
    const p1 = policy(t0 + 10, {})
    const q = prompt(k.bobLaptop.sk, t0 + 20, '@deploy edit it')
    const c = card(q, t0 + 21, 'edit', 'edit main.ts', p1.id)
    // Alice opens approvals to the fleet after the card was asked; Dan then answers it.
    const p2 = policy(t0 + 30, { approvers: 'fleet' })
    const events = [p1, q, c, p2, decide(c, k.danLaptop.sk, t0 + 31), reply(q, t0 + 33, 'edited')]
    expect(codes(events, v)).toEqual(['policy-changed'])
    // Bob's laptop signs a policy for Alice's agent: it counts for nothing, and a card naming
    // it names no policy in force.
    const forged = policy(t0 + 15, { approvers: 'fleet' }, k.bobLaptop.sk)
    const c2 = card(q, t0 + 22, 'edit', 'edit other.ts', forged.id)
    const report = audit([p1, forged, q, c2, decide(c2, k.carolLaptop.sk, t0 + 23)], v)
    expect(report.flags.map((f) => f.code)).toEqual(['policy-mismatch'])
    expect(report.turns[0]!.cards[0]!.policyInForce).toBe(p1.id)
  })

  it('flags a session started in a mode by someone who is not an approver', () => {
    const { v, k, policy, prompt, reply } = fleet()
    const p1 = policy(t0 + 10, {})
    const byDan = prompt(k.danLaptop.sk, t0 + 20, '@deploy go', [['mode', 'bypassPermissions']])
    const byBob = prompt(k.bobLaptop.sk, t0 + 21, '@deploy go', [['mode', 'bypassPermissions']])
    const report = audit(
      [p1, byDan, byBob, reply(byDan, t0 + 22, 'ok'), reply(byBob, t0 + 23, 'ok')],
      v,
    )
    expect(report.flags).toEqual([
      expect.objectContaining({ code: 'bypass-start', event: byDan.id }),
    ])
  })
})
