import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf, signEvent, verifyEventSignature } from '../../src/events/event.js'
import { Kind } from '../../src/events/kinds.js'
import {
  actions,
  actorClasses,
  agentActor,
  authorityTable,
  decisionAction,
  mayAct,
  mayActOnAgent,
  type Action,
  type ActorClass,
} from '../../src/grants/authority.js'
import { signGrant, type Role } from '../../src/grants/grant.js'
import { makeRevocation } from '../../src/grants/revocation.js'
import { GrantVerifier } from '../../src/grants/verifier.js'

/**
 * Every cell, written out by hand: a change to the table in src/grants/authority.ts must change
 * this too, so no cell moves without a reviewer seeing it.
 */
const expected: Record<Action, string> = {
  profile: 'owner allowed approver admin founder agent member',
  'chat.post': 'owner allowed approver admin founder agent member',
  'agent.prompt': 'owner allowed',
  'agent.broadcast': 'owner allowed',
  'agent.interrupt': 'owner approver',
  'session.start.project': 'owner allowed',
  'session.start.worktree': 'owner allowed',
  'session.start.mode': 'owner approver',
  'session.start.model': 'owner approver',
  'session.set': 'owner approver',
  'session.close': 'owner approver',
  'session.state': 'owner allowed approver admin founder agent member',
  'agent.policy': 'owner',
  'agent.cancel': 'owner approver',
  'card.request': 'agent',
  'card.decide.allow_once': 'owner approver',
  'card.decide.allow_always': 'owner approver',
  'card.decide.reject_once': 'owner approver',
  'card.decide.reject_always': 'owner approver',
  'observer.frame': 'owner allowed approver admin founder agent member',
  'grant.owner': 'admin founder',
  'grant.admin': 'admin founder',
  'grant.device': 'owner allowed approver admin founder member',
  'grant.agent': 'owner allowed approver admin founder member',
  'grant.hub': 'founder',
  revocation: 'owner allowed approver admin founder member',
  'channel.define': 'owner allowed approver admin founder member',
  'channel.define.in-use': 'admin founder',
  'fleet.setting': 'admin founder',
  'e2e.envelope': 'owner allowed approver admin founder agent member',
  'push.sender': 'owner allowed approver admin founder agent member',
  'push.subscription': 'owner',
  presence: 'owner allowed approver admin founder agent member',
  pairing: 'owner allowed approver admin founder agent member stranger',
  'client.auth': 'owner allowed approver admin founder agent member hub removed stranger',
}

describe('the authority table', () => {
  it('has one row per action, and every cell is as written here', () => {
    expect(authorityTable.map((r) => r.action)).toEqual([...actions])
    for (const action of actions) {
      const allowed = new Set(expected[action].split(' '))
      for (const actor of actorClasses) {
        expect({ action, actor, may: mayAct(action, actor) }).toEqual({
          action,
          actor,
          may: allowed.has(actor),
        })
      }
    }
  })

  it('has a row for every kind Kith puts on the wire', () => {
    const covered = new Set(authorityTable.map((r) => r.kind))
    for (const [name, kind] of Object.entries(Kind))
      expect({ name, kind, covered: covered.has(kind) }).toEqual({ name, kind, covered: true })
  })

  it('never lets a removed person or a stranger run anything on a machine', () => {
    const runs: Action[] = actions.filter(
      (a) => a.startsWith('agent.') || a.startsWith('session.') || a.startsWith('card.'),
    )
    for (const a of runs) {
      expect(mayAct(a, 'removed')).toBe(false)
      expect(mayAct(a, 'stranger')).toBe(false)
      expect(mayAct(a, 'hub')).toBe(false)
      // A removed key keeps no other standing: a stale policy listing it changes nothing.
      expect(mayAct(a, ['removed', 'owner'])).toBe(false)
    }
  })

  it('reads a decision by the kind of the option it chose; an unknown kind is the widest', () => {
    expect(decisionAction('allow_once')).toBe('card.decide.allow_once')
    expect(decisionAction('allow_always')).toBe('card.decide.allow_always')
    expect(decisionAction('reject_once')).toBe('card.decide.reject_once')
    expect(decisionAction('reject_always')).toBe('card.decide.reject_always')
    expect(decisionAction('something_new')).toBe('card.decide.allow_always')
    expect(decisionAction(undefined)).toBe('card.decide.allow_always')
  })
})

const now = 1_800_000_000

/**
 * A fleet of real signed grants: founder fay; admin ada; alice (who hosts the agent) with her
 * laptop; bob, allowed to prompt; carol, an approver; dan, a plain member; eve, removed; a hub.
 */
function fleet() {
  const key = () => {
    const sk = generateSecretKey()
    return { sk, pk: publicKeyOf(sk) }
  }
  const k = {
    fay: key(),
    ada: key(),
    alice: key(),
    laptop: key(),
    agent: key(),
    bob: key(),
    carol: key(),
    dan: key(),
    eve: key(),
    hub: key(),
    stranger: key(),
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
      now,
    )
    expect(v.add(e).status).toBe('accepted')
    return e.id
  }
  grant(k.fay, k.ada, 'owner', { deleg: true })
  const gAlice = grant(k.fay, k.alice, 'owner')
  const gLaptop = grant(k.alice, k.laptop, 'device', { deleg: true, parent: gAlice })
  grant(k.laptop, k.agent, 'agent', { parent: gLaptop })
  for (const p of [k.bob, k.carol, k.dan, k.eve]) grant(k.fay, p, 'owner')
  grant(k.fay, k.hub, 'hub')
  const rev = signEvent(makeRevocation({ keys: [k.eve.pk], fleet: k.fay.pk }, now), k.fay.sk)
  expect(v.add(rev).status).toBe('accepted')
  const agent = {
    key: k.agent.pk,
    owner: k.alice.pk,
    allow: [k.bob.pk, k.eve.pk],
    approvers: [k.carol.pk, k.eve.pk],
  }
  return { v, k, agent }
}

describe('who is who toward an agent, from real grants', () => {
  it('classes each key as the table names it', () => {
    const { v, k, agent } = fleet()
    const classes = (pk: string) => agentActor(v, pk, now, agent).sort()
    expect(classes(k.alice.pk)).toEqual(['allowed', 'approver', 'member', 'owner'])
    expect(classes(k.laptop.pk)).toEqual(['allowed', 'approver', 'member', 'owner'])
    expect(classes(k.agent.pk)).toEqual(['agent', 'member'])
    expect(classes(k.bob.pk)).toEqual(['allowed', 'member'])
    expect(classes(k.carol.pk)).toEqual(['approver', 'member'])
    expect(classes(k.dan.pk)).toEqual(['member'])
    expect(classes(k.ada.pk)).toEqual(['admin', 'member'])
    expect(classes(k.fay.pk)).toEqual(['founder', 'member'])
    // Listed in both policies, and still nobody: the policy never outlives the grant.
    expect(classes(k.eve.pk)).toEqual(['removed'])
    expect(classes(k.hub.pk)).toEqual(['hub'])
    expect(classes(k.stranger.pk)).toEqual(['stranger'])
  })

  it('decides each agent action for each of them', () => {
    const { v, k, agent } = fleet()
    const may = (who: { pk: string }, a: Action) => mayActOnAgent(v, who.pk, now, agent, a)
    const table: [keyof typeof k, Action[]][] = [
      ['alice', ['agent.prompt', 'session.start.mode', 'card.decide.allow_once', 'agent.cancel']],
      ['laptop', ['agent.prompt', 'session.start.mode', 'card.decide.allow_always']],
      ['bob', ['agent.prompt', 'session.start.project', 'session.start.worktree']],
      ['carol', ['session.start.mode', 'session.set', 'card.decide.allow_once', 'agent.cancel']],
    ]
    const agentActions = actions.filter(
      (a) => a.startsWith('agent.') || a.startsWith('session.start') || a.startsWith('card.decide'),
    )
    for (const [who, yes] of table)
      for (const a of agentActions)
        expect({ who, a, may: may(k[who], a) }).toEqual({
          who,
          a,
          may:
            yes.includes(a) ||
            expected[a].split(' ').some((c) => classOf(who).includes(c as ActorClass)),
        })
    for (const who of ['dan', 'ada', 'fay', 'eve', 'hub', 'stranger', 'agent'] as const)
      for (const a of agentActions)
        expect({ who, a, may: may(k[who], a) }).toEqual({ who, a, may: false })
  })
})

function classOf(who: string): ActorClass[] {
  if (who === 'alice' || who === 'laptop') return ['owner']
  if (who === 'bob') return ['allowed']
  if (who === 'carol') return ['approver']
  return []
}
