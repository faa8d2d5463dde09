import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import {
  publicKeyOf,
  signEvent,
  verifyEventSignature,
  type NostrEvent,
} from '../../src/events/event.js'
import { makeChannelDefinition } from '../../src/events/channel-def.js'
import { Kind } from '../../src/events/kinds.js'
import { authorityTable, mayAct, type Action, type ActorClass } from '../../src/grants/authority.js'
import { FleetState } from '../../src/grants/fleet-state.js'
import { signGrant, type Role } from '../../src/grants/grant.js'
import { makeRevocation } from '../../src/grants/revocation.js'

/**
 * The table's cells that admission enforces, checked against the real FleetState that hubs and
 * nodes both admit through: what the table allows a class, admission takes; from a hub key, a
 * removed person or a stranger, admission takes nothing the table refuses them.
 */
const now = 1_800_000_000
type K = { sk: Uint8Array; pk: string }
const key = (): K => {
  const sk = generateSecretKey()
  return { sk, pk: publicKeyOf(sk) }
}

function fleet() {
  const k = {
    founder: key(),
    admin: key(),
    owner: key(),
    device: key(),
    agent: key(),
    member: key(),
    hub: key(),
    removed: key(),
    stranger: key(),
  }
  const state = new FleetState({ founder: k.founder.pk, verifySignature: verifyEventSignature })
  const grant = (
    issuer: K,
    subject: K,
    role: Role,
    extra: { deleg?: boolean; parent?: string } = {},
  ) => {
    const e = signGrant(
      { subject: subject.pk, role, fleet: k.founder.pk, ...extra },
      issuer.sk,
      subject.sk,
      now - 100,
    )
    const a = state.admit(e, now)
    expect(a.ok).toBe(true)
    return e.id
  }
  const gAdmin = grant(k.founder, k.admin, 'owner', { deleg: true })
  const gOwner = grant(k.founder, k.owner, 'owner')
  const gDevice = grant(k.owner, k.device, 'device', { deleg: true, parent: gOwner })
  grant(k.device, k.agent, 'agent', { parent: gDevice })
  const gMember = grant(k.founder, k.member, 'owner')
  const gRemoved = grant(k.founder, k.removed, 'owner')
  grant(k.founder, k.hub, 'hub')
  const rev = signEvent(
    makeRevocation({ keys: [k.removed.pk], fleet: k.founder.pk }, now - 50),
    k.founder.sk,
  )
  expect(state.admit(rev, now).ok).toBe(true)
  return {
    state,
    k,
    parents: { [k.admin.pk]: gAdmin, [k.member.pk]: gMember, [k.removed.pk]: gRemoved } as Record<
      string,
      string
    >,
  }
}

/** The key that plays each class (the owner's device for `owner`, as a person's node signs). */
const players: Partial<Record<ActorClass, keyof ReturnType<typeof fleet>['k']>> = {
  owner: 'device',
  admin: 'admin',
  founder: 'founder',
  agent: 'agent',
  member: 'member',
  hub: 'hub',
  removed: 'removed',
  stranger: 'stranger',
}

/** An event of each plain kind, as its action makes it. */
function plain(
  action: Action,
  fleetKey: string,
): { kind: number; tags: string[][]; content: string } | undefined {
  const f = ['fleet', fleetKey]
  switch (action) {
    case 'profile':
      return { kind: Kind.Profile, tags: [], content: '{"name":"x"}' }
    case 'chat.post':
      return { kind: Kind.ChatMessage, tags: [['h', 'ops'], f], content: 'hi' }
    case 'presence':
      return { kind: Kind.Presence, tags: [], content: '' }
    case 'session.state':
      return { kind: Kind.SessionState, tags: [['d', 'a:ops:'], f], content: '{}' }
    case 'push.sender':
      return { kind: Kind.PushSender, tags: [['d', 'kith-push']], content: '{}' }
    case 'observer.frame':
      return { kind: Kind.ObserverFrame, tags: [['p', fleetKey]], content: 'x' }
    case 'e2e.envelope':
      return { kind: Kind.KeyEnvelope, tags: [['p', fleetKey]], content: 'x' }
    default:
      return undefined
  }
}

describe('the authority table against real admission (FleetState)', () => {
  it('admits each plain kind from every class the table allows, and from no hub, removed person or stranger', () => {
    const { state, k } = fleet()
    let checked = 0
    for (const row of authorityTable) {
      if (!row.enforcedBy.includes('admission')) continue
      const template = plain(row.action, k.founder.pk)
      if (template === undefined) continue
      for (const [cls, who] of Object.entries(players) as [ActorClass, keyof typeof k][]) {
        const event = signEvent({ ...template, created_at: now }, k[who].sk)
        const admitted = state.admit(event, now).ok
        const may = mayAct(row.action, cls)
        if (may)
          expect({ action: row.action, cls, admitted }).toEqual({
            action: row.action,
            cls,
            admitted: true,
          })
        if (cls === 'hub' || cls === 'removed' || cls === 'stranger')
          expect({ action: row.action, cls, admitted }).toEqual({
            action: row.action,
            cls,
            admitted: may,
          })
        checked++
      }
    }
    expect(checked).toBeGreaterThanOrEqual(7 * 8)
  })

  it('takes a grant of each role only from the classes the table names', () => {
    const { state, k, parents } = fleet()
    const cases: [Action, Role, boolean][] = [
      ['grant.owner', 'owner', false],
      ['grant.admin', 'owner', true],
      ['grant.hub', 'hub', false],
    ]
    const issuers: [ActorClass, K][] = [
      ['founder', k.founder],
      ['admin', k.admin],
      ['member', k.member],
      ['removed', k.removed],
      ['stranger', k.stranger],
    ]
    for (const [action, role, deleg] of cases)
      for (const [cls, issuer] of issuers) {
        const subject = key()
        const g = signGrant(
          {
            subject: subject.pk,
            role,
            fleet: k.founder.pk,
            ...(deleg ? { deleg: true } : {}),
            ...(parents[issuer.pk] === undefined ? {} : { parent: parents[issuer.pk] }),
          },
          issuer.sk,
          subject.sk,
          now,
        )
        const admitted = state.admit(g, now).ok
        expect({ action, cls, admitted }).toEqual({ action, cls, admitted: mayAct(action, cls) })
      }
  })

  it('lets only an admin or the founder define a channel others already post in', () => {
    const { state, k } = fleet()
    const post = (who: K, channel: string) =>
      expect(
        state.admit(
          signEvent(
            {
              kind: Kind.ChatMessage,
              created_at: now - 10,
              tags: [
                ['h', channel],
                ['fleet', k.founder.pk],
              ],
              content: 'in use',
            },
            who.sk,
          ),
          now,
        ).ok,
      ).toBe(true)
    const define = (who: K, channel: string): NostrEvent =>
      signEvent(
        makeChannelDefinition(
          { channel, fleet: k.founder.pk, creator: who.pk, private: true, members: [who.pk] },
          now,
        ),
        who.sk,
      )
    for (const [cls, who] of [
      ['member', k.member],
      ['admin', k.admin],
      ['founder', k.founder],
    ] as [ActorClass, K][]) {
      const channel = `deploy-${cls}`
      post(k.owner, channel)
      const admitted = state.admit(define(who, channel), now).ok
      expect({ cls, admitted }).toEqual({ cls, admitted: mayAct('channel.define.in-use', cls) })
      // A channel nobody uses yet: any person may define it.
      expect(state.admit(define(who, `new-${cls}`), now).ok).toBe(mayAct('channel.define', cls))
    }
  })
})
