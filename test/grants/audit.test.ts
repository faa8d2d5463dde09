import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { makeAgentPolicy, type AgentPolicyContent } from '../../src/events/agent-policy.js'
import {
  publicKeyOf,
  signEvent,
  type EventTemplate,
  verifyEventSignature,
  type NostrEvent,
} from '../../src/events/event.js'
import { Kind } from '../../src/events/kinds.js'
import { makePermissionDecision } from '../../src/events/permission-decision.js'
import { makePermissionRequest } from '../../src/events/permission-request.js'
import { workTags, type WorkTool } from '../../src/events/turn-work.js'
import { newEpoch, type Epoch } from '../../src/events/e2e-epoch.js'
import { sealedKinds, sealTemplate } from '../../src/events/e2e-seal.js'
import { audit, type AuditFlagCode } from '../../src/grants/audit.js'
import { epochLine, parseExportLine } from '../../src/grants/audit-export.js'
import { signGrant, type Role } from '../../src/grants/grant.js'

// kith audit over histories a test builds: an honest one passes with no flag; each forged or
// out-of-policy one is flagged with its code (issue 33). Real signatures throughout.

const t0 = 1_800_000_000
const key = () => {
  const sk = generateSecretKey()
  return { sk, pk: publicKeyOf(sk) }
}

/** Founder fay; alice (laptop, phone; the laptop hosts `deploy`); bob (laptop); carol (laptop). */
function fleet() {
  const k = {
    fay: key(),
    alice: key(),
    laptop: key(),
    phone: key(),
    agent: key(),
    bob: key(),
    bobLaptop: key(),
    carol: key(),
    carolLaptop: key(),
  }
  const events: NostrEvent[] = []
  const grant = (
    issuer: { sk: Uint8Array },
    subject: { pk: string; sk: Uint8Array },
    role: Role,
    extra: { deleg?: boolean; parent?: string; name?: string } = {},
  ) => {
    const e = signGrant(
      { subject: subject.pk, role, fleet: k.fay.pk, ...extra },
      issuer.sk,
      subject.sk,
      t0,
    )
    events.push(e)
    return e.id
  }
  const gAlice = grant(k.fay, k.alice, 'owner', { name: 'alice' })
  const gLaptop = grant(k.alice, k.laptop, 'device', {
    deleg: true,
    parent: gAlice,
    name: 'alice-laptop',
  })
  grant(k.alice, k.phone, 'device', { parent: gAlice, name: 'alice-phone' })
  grant(k.laptop, k.agent, 'agent', { parent: gLaptop, name: 'deploy' })
  const gBob = grant(k.fay, k.bob, 'owner', { name: 'bob' })
  grant(k.bob, k.bobLaptop, 'device', { parent: gBob, name: 'bob-laptop' })
  const gCarol = grant(k.fay, k.carol, 'owner', { name: 'carol' })
  grant(k.carol, k.carolLaptop, 'device', { parent: gCarol, name: 'carol-laptop' })
  return { k, events }
}

type Fleet = ReturnType<typeof fleet>
const options = [
  { optionId: 'allow', name: 'Allow', kind: 'allow_once' },
  { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
]

/** The epoch the helpers below seal under (kith-e2e/1), while a test sets one. */
let sealingUnder: Epoch | undefined

/** Signs as `signEvent`, sealed under `sealingUnder` for a sealed kind while one is set. */
function sign(template: EventTemplate, sk: Uint8Array): NostrEvent {
  if (sealingUnder === undefined || !sealedKinds.has(template.kind)) return signEvent(template, sk)
  return signEvent(sealTemplate(template, publicKeyOf(sk), sealingUnder), sk)
}

function policy(f: Fleet, at: number, content: Partial<AgentPolicyContent> = {}): NostrEvent {
  const e = signEvent(
    makeAgentPolicy(
      {
        agent: f.k.agent.pk,
        fleet: f.k.fay.pk,
        allow: 'fleet',
        approvers: [f.k.bob.pk],
        permissions: 'ask',
        ...content,
      },
      at,
    ),
    f.k.laptop.sk,
  )
  f.events.push(e)
  return e
}

function prompt(f: Fleet, from: { sk: Uint8Array }, at: number, tags: string[][] = []): NostrEvent {
  const e = sign(
    {
      kind: Kind.ChatMessage,
      created_at: at,
      tags: [['h', 'ops'], ['fleet', f.k.fay.pk], ['p', f.k.agent.pk], ...tags],
      content: 'deploy: ship it',
    },
    from.sk,
  )
  f.events.push(e)
  return e
}

function card(
  f: Fleet,
  q: NostrEvent,
  at: number,
  tool: { id: string; kind: string; title: string },
  extra: { policy?: string } = {},
): NostrEvent {
  const template = makePermissionRequest(
    {
      channel: 'ops',
      fleet: f.k.fay.pk,
      prompt: q.id,
      prompter: q.pubkey,
      title: tool.title,
      toolKind: tool.kind,
      options,
      expires: at + 600,
      toolCallId: tool.id,
      sessionId: 's1',
      input: '0'.repeat(64),
      nonce: '0123456789abcdef',
      ...extra,
    },
    at,
  )
  const e = sign(template, f.k.agent.sk)
  f.events.push(e)
  return e
}

function decide(f: Fleet, c: NostrEvent, by: { sk: Uint8Array }, optionId: string, at: number) {
  const e = sign(
    makePermissionDecision(
      { request: { id: c.id, channel: 'ops', agent: f.k.agent.pk }, fleet: f.k.fay.pk, optionId },
      at,
    ),
    by.sk,
  )
  f.events.push(e)
  return e
}

function answer(f: Fleet, q: NostrEvent, at: number, tools: WorkTool[]): NostrEvent {
  const e = sign(
    {
      kind: Kind.ChatMessage,
      created_at: at,
      tags: [
        ['h', 'ops'],
        ['fleet', f.k.fay.pk],
        ['e', q.id, '', 'root'],
        ['p', q.pubkey],
        ...workTags(tools),
      ],
      content: 'done',
    },
    f.k.agent.sk,
  )
  f.events.push(e)
  return e
}

const run = (f: Fleet) =>
  audit({ fleet: f.k.fay.pk, events: f.events, verifySignature: verifyEventSignature })
const codes = (f: Fleet): AuditFlagCode[] => run(f).flags.map((x) => x.code)
const exec = { id: 'call-1', kind: 'execute', title: 'kubectl apply' }

/** An honest turn: carol prompts, the card is allowed by bob (the approver), the tool runs. */
function honest() {
  const f = fleet()
  const p = policy(f, t0 + 10)
  const q = prompt(f, f.k.carolLaptop, t0 + 20)
  const c = card(f, q, t0 + 21, exec, { policy: p.id })
  decide(f, c, f.k.bobLaptop, 'allow', t0 + 30)
  answer(f, q, t0 + 40, [{ ...exec, status: 'completed' }])
  return { f, p, q, c }
}

describe('kith audit', () => {
  it('an honest history passes, and the report tells who did what under which policy', () => {
    const { f, p, q, c } = honest()
    const r = run(f)
    expect(r.flags).toEqual([])
    expect(r.counts).toMatchObject({
      turns: 1,
      cards: 1,
      decisions: 1,
      policies: 1,
      badSignatures: 0,
    })
    const turn = r.turns[0]!
    expect(turn).toMatchObject({
      id: q.id,
      agent: { key: f.k.agent.pk, name: 'deploy' },
      prompter: {
        key: f.k.carolLaptop.pk,
        person: f.k.carol.pk,
        name: 'carol-laptop',
        allowed: true,
      },
      policy: { id: p.id, permissions: 'ask' },
      outcome: 'answered',
      seconds: 20,
    })
    expect(turn.prompter.chain).toHaveLength(2)
    expect(turn.cards[0]).toMatchObject({
      id: c.id,
      toolKind: 'execute',
      title: 'kubectl apply',
      policy: p.id,
      ran: 'completed',
      tally: { state: 'allowed', allowedBy: [f.k.bob.pk] },
    })
    expect(turn.cards[0]!.decisions[0]).toMatchObject({
      by: { person: f.k.bob.pk },
      approver: true,
    })
  })

  it('a decision signed by a non-approver, injected into a store, is flagged', () => {
    const f = fleet()
    const p = policy(f, t0 + 10)
    const q = prompt(f, f.k.carolLaptop, t0 + 20)
    const c = card(f, q, t0 + 21, exec, { policy: p.id })
    decide(f, c, f.k.carolLaptop, 'allow', t0 + 30)
    answer(f, q, t0 + 40, [{ ...exec, status: 'completed' }])
    expect(codes(f)).toEqual(['non-approver-decision'])
  })

  it('a card answered after its policy changed is flagged', () => {
    const f = fleet()
    const p = policy(f, t0 + 10, { approvers: 'fleet' })
    const q = prompt(f, f.k.carolLaptop, t0 + 20)
    const c = card(f, q, t0 + 21, exec, { policy: p.id })
    // The owner narrows the approvers to bob; bob answers the old card after that.
    policy(f, t0 + 25, { approvers: [f.k.bob.pk] })
    decide(f, c, f.k.bobLaptop, 'allow', t0 + 30)
    answer(f, q, t0 + 40, [{ ...exec, status: 'completed' }])
    expect(codes(f)).toEqual(['answered-after-policy-change'])
  })

  it('a bypass-mode start by someone who is not an approver is flagged', () => {
    const f = fleet()
    policy(f, t0 + 10)
    const q = prompt(f, f.k.carolLaptop, t0 + 20, [
      ['project', 'app'],
      ['mode', 'bypassPermissions'],
    ])
    answer(f, q, t0 + 40, [])
    expect(codes(f)).toEqual(['start-not-approver'])
    // The same start by bob (an approver) is not.
    const g = fleet()
    policy(g, t0 + 10)
    answer(
      g,
      prompt(g, g.k.bobLaptop, t0 + 20, [
        ['project', 'app'],
        ['mode', 'bypassPermissions'],
      ]),
      t0 + 40,
      [],
    )
    expect(codes(g)).toEqual([])
  })

  it('a quorum card that ran on one person (two of their devices) is flagged; two people pass', () => {
    const short = fleet()
    const p = policy(short, t0 + 10, { approvers: 'fleet', quorum: { n: 2, for: ['execute'] } })
    const q = prompt(short, short.k.carolLaptop, t0 + 20)
    const c = card(short, q, t0 + 21, exec, { policy: p.id })
    decide(short, c, short.k.laptop, 'allow', t0 + 30)
    decide(short, c, short.k.phone, 'allow', t0 + 31)
    answer(short, q, t0 + 40, [{ ...exec, status: 'completed' }])
    expect(codes(short)).toEqual(['quorum-short'])

    const two = fleet()
    const p2 = policy(two, t0 + 10, { approvers: 'fleet', quorum: { n: 2, for: ['execute'] } })
    const q2 = prompt(two, two.k.carolLaptop, t0 + 20)
    const c2 = card(two, q2, t0 + 21, exec, { policy: p2.id })
    decide(two, c2, two.k.laptop, 'allow', t0 + 30)
    decide(two, c2, two.k.bobLaptop, 'allow', t0 + 31)
    answer(two, q2, t0 + 40, [{ ...exec, status: 'completed' }])
    expect(codes(two)).toEqual([])
    expect(run(two).turns[0]!.cards[0]!.tally).toMatchObject({ n: 2, state: 'allowed' })
  })

  it('a tool that ran with no card while the policy said ask, or auto-allowed against it, is flagged', () => {
    const f = fleet()
    policy(f, t0 + 10)
    const q = prompt(f, f.k.carolLaptop, t0 + 20)
    answer(f, q, t0 + 40, [
      { id: 'r', kind: 'read', title: 'cat README', status: 'completed' },
      { ...exec, status: 'completed' },
      {
        id: 'e2',
        kind: 'edit',
        title: 'edit main.ts',
        status: 'completed',
        allowedBy: 'allow-all',
      },
    ])
    expect(codes(f).sort()).toEqual(['auto-allowed-against-policy', 'ran-without-card'])
  })

  it('a prompt the policy did not allow that the agent acted on is flagged', () => {
    const f = fleet()
    policy(f, t0 + 10, { allow: 'owner' })
    const q = prompt(f, f.k.carolLaptop, t0 + 20)
    answer(f, q, t0 + 40, [])
    expect(codes(f)).toEqual(['prompt-not-allowed'])
  })

  it('a policy signed by someone other than the agent owner counts for nothing and is flagged', () => {
    const f = fleet()
    policy(f, t0 + 10)
    // Carol signs a policy that makes her an approver; her decision then still does not count.
    const forged = signEvent(
      makeAgentPolicy(
        {
          agent: f.k.agent.pk,
          fleet: f.k.fay.pk,
          allow: 'fleet',
          approvers: 'fleet',
          permissions: 'ask',
        },
        t0 + 15,
      ),
      f.k.carolLaptop.sk,
    )
    f.events.push(forged)
    const q = prompt(f, f.k.carolLaptop, t0 + 20)
    const c = card(f, q, t0 + 21, exec)
    decide(f, c, f.k.carolLaptop, 'allow', t0 + 30)
    answer(f, q, t0 + 40, [{ ...exec, status: 'completed' }])
    expect(codes(f).sort()).toEqual(['non-approver-decision', 'policy-refused'])
  })

  it('a tampered event is left out and flagged; no policy on record is said, not guessed', () => {
    const { f } = honest()
    const i = f.events.findIndex((e) => e.kind === Kind.PermissionDecision)
    f.events[i] = { ...f.events[i]!, content: JSON.stringify({ optionId: 'reject' }) }
    expect(codes(f)).toContain('bad-signature')
    const g = fleet()
    answer(g, prompt(g, g.k.carolLaptop, t0 + 20), t0 + 40, [{ ...exec, status: 'completed' }])
    const r = run(g)
    expect(r.flags).toEqual([])
    expect(r.notes.join('\n')).toMatch(/no agent policy/)
    expect(r.notes.join('\n')).not.toMatch(/no agent turn/)
  })

  it('events with no turn in them say so: nothing flagged is not a pass over turns', () => {
    const f = fleet()
    policy(f, t0 + 10)
    const r = run(f)
    expect(r.flags).toEqual([])
    expect(r.counts.turns).toBe(0)
    expect(r.notes.join('\n')).toMatch(/hold no agent turn/)
  })
})

// Vectors (nips/kith-agents.md, "Audit"): fixed signed histories and the flags any audit must
// find in them. KITH_WRITE_VECTORS=audit rewrites the file from the scenarios below.
const vectorFile = fileURLToPath(new URL('../vectors/audit.json', import.meta.url))

function scenarios(): { name: string; fleet: string; events: NostrEvent[] }[] {
  const out: { name: string; fleet: string; events: NostrEvent[] }[] = []
  const add = (name: string, f: Fleet) => out.push({ name, fleet: f.k.fay.pk, events: f.events })
  add('honest: an approver allowed the card, the tool ran', honest().f)
  {
    const f = fleet()
    const p = policy(f, t0 + 10)
    const q = prompt(f, f.k.carolLaptop, t0 + 20)
    decide(f, card(f, q, t0 + 21, exec, { policy: p.id }), f.k.carolLaptop, 'allow', t0 + 30)
    answer(f, q, t0 + 40, [{ ...exec, status: 'completed' }])
    add('a non-approver allowed the card and the tool ran', f)
  }
  {
    const f = fleet()
    const p = policy(f, t0 + 10, { approvers: 'fleet', quorum: { n: 2, for: ['execute'] } })
    const q = prompt(f, f.k.carolLaptop, t0 + 20)
    const c = card(f, q, t0 + 21, exec, { policy: p.id })
    decide(f, c, f.k.laptop, 'allow', t0 + 30)
    decide(f, c, f.k.phone, 'allow', t0 + 31)
    answer(f, q, t0 + 40, [{ ...exec, status: 'completed' }])
    add('a quorum of 2 met by two devices of one person', f)
  }
  {
    const f = fleet()
    policy(f, t0 + 10)
    answer(
      f,
      prompt(f, f.k.carolLaptop, t0 + 20, [
        ['project', 'app'],
        ['mode', 'bypassPermissions'],
      ]),
      t0 + 40,
      [],
    )
    add('a bypass-mode start by a non-approver', f)
  }
  return out
}

/** `build`'s history with every event of a sealed kind sealed under `epoch` as it is signed. */
function sealedHistory<T>(epoch: Epoch, build: () => T): T {
  sealingUnder = epoch
  try {
    return build()
  } finally {
    sealingUnder = undefined
  }
}

describe('kith audit of a sealed history (an export with its epoch keys)', () => {
  const random = (n: number) => crypto.getRandomValues(new Uint8Array(n))

  it('opens each sealed event with a disclosed key after its signature checks, and judges it as any other', () => {
    const epoch = newEpoch('ops', 0, random)
    const { f, q } = sealedHistory(epoch, honest)
    expect(f.events.filter((e) => e.tags.some((t) => t[0] === 'e2e'))).toHaveLength(4)
    // The key as an export line, read back: its id is computed, not taken.
    const line = parseExportLine(JSON.parse(epochLine(epoch)))
    expect('epoch' in line && line.epoch.id).toBe(epoch.id)
    const keys = new Map([[epoch.id, epoch]])
    const r = audit({
      fleet: f.k.fay.pk,
      events: f.events,
      verifySignature: verifyEventSignature,
      keyOf: (id) => keys.get(id),
    })
    expect(r.flags).toEqual([])
    expect(r.counts).toMatchObject({ turns: 1, cards: 1, decisions: 1, opened: 4, sealed: 0 })
    expect(r.turns[0]!.id).toBe(q.id)
    expect(r.turns[0]!.cards[0]!.decisions[0]!.approver).toBe(true)
    // No key, or a key of another epoch: nothing is read, and the report says so.
    for (const keyOf of [undefined, () => newEpoch('ops', 0, random)]) {
      const blind = audit({
        fleet: f.k.fay.pk,
        events: f.events,
        verifySignature: verifyEventSignature,
        ...(keyOf === undefined ? {} : { keyOf }),
      })
      expect(blind.counts).toMatchObject({ turns: 0, opened: 0, sealed: 4 })
      expect(blind.notes.join('\n')).toMatch(/4 sealed events could not be read here/)
    }
  })

  it("a forged decision sealed under the fleet's key is still judged: sealing hides nothing from the audit", () => {
    const epoch = newEpoch('ops', 0, random)
    const keyOf = (id: string) => (id === epoch.id ? epoch : undefined)
    const f = sealedHistory(epoch, () => {
      const { f, c } = honest()
      // carol (a member, not an approver) allows it, sealed like any other; bob's allow removed.
      f.events.splice(
        f.events.findIndex((e) => e.kind === Kind.PermissionDecision),
        1,
      )
      decide(f, c, f.k.carolLaptop, 'allow', t0 + 30)
      return f
    })
    const r = audit({
      fleet: f.k.fay.pk,
      events: f.events,
      verifySignature: verifyEventSignature,
      keyOf,
    })
    expect(r.flags.map((x) => x.code)).toEqual(['non-approver-decision'])
    // An opened form presented under the sealed form's signature (what a node's store keeps) is
    // a bad signature, not a decision.
    const at = f.events.findIndex((e) => e.kind === Kind.PermissionDecision)
    const opened = [...f.events]
    opened[at] = { ...opened[at]!, content: '{"optionId":"allow"}', tags: [['h', 'ops']] }
    const forged = audit({
      fleet: f.k.fay.pk,
      events: opened,
      verifySignature: verifyEventSignature,
      keyOf,
    })
    expect(forged.flags.map((x) => x.code)).toContain('bad-signature')
  })
})

describe('kith audit vectors (test/vectors/audit.json)', () => {
  if (process.env.KITH_WRITE_VECTORS === 'audit') {
    const vectors = scenarios().map((s) => ({
      ...s,
      flags: audit({ ...s, verifySignature: verifyEventSignature }).flags.map((x) => x.code),
    }))
    writeFileSync(vectorFile, `${JSON.stringify(vectors, null, 2)}\n`)
  }
  const vectors = JSON.parse(readFileSync(vectorFile, 'utf8')) as {
    name: string
    fleet: string
    events: NostrEvent[]
    flags: AuditFlagCode[]
  }[]
  it('has an honest history and each kind of forgery', () => {
    expect(vectors.map((x) => x.flags)).toEqual([
      [],
      ['non-approver-decision'],
      ['quorum-short'],
      ['start-not-approver'],
    ])
  })
  for (const vector of vectors)
    it(vector.name, () => {
      const r = audit({
        fleet: vector.fleet,
        events: vector.events,
        verifySignature: verifyEventSignature,
      })
      expect(r.flags.map((x) => x.code)).toEqual(vector.flags)
    })
})
