import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf, signEvent, verifyEventSignature } from '../../src/events/event.js'
import { makeFleetSetting } from '../../src/events/e2e-setting.js'
import { Kind } from '../../src/events/kinds.js'
import { makePermissionRequest } from '../../src/events/permission-request.js'
import { makePushSubscription } from '../../src/events/push.js'
import { personOf } from '../../src/grants/members.js'
import { classify } from '../../src/notify/classify.js'
import { authorityRow, mayAct } from '../../src/grants/authority.js'
import { actionOf, fleetActor, mayAdmit, mayPushThrough } from '../../src/grants/event-authority.js'
import { FleetState } from '../../src/grants/fleet-state.js'
import { signGrant, type Role } from '../../src/grants/grant.js'
import { makeRevocation } from '../../src/grants/revocation.js'

/**
 * Admission decides "who" through the authority table (grants/event-authority.ts): the row of
 * each event (`actionOf`), its author's classes at its date (`fleetActor`), and `mayAdmit`. Each
 * attacker here was admitted before admission asked the table.
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
    alice: key(),
    aliceNode: key(),
    alicePhone: key(),
    bob: key(),
    bobPhone: key(),
    hub: key(),
    removed: key(),
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
    expect(state.admit(e, now).ok).toBe(true)
    return e.id
  }
  grant(k.founder, k.admin, 'owner', { deleg: true })
  const gAlice = grant(k.founder, k.alice, 'owner')
  grant(k.alice, k.aliceNode, 'device', { parent: gAlice })
  grant(k.alice, k.alicePhone, 'device', { parent: gAlice })
  const gBob = grant(k.founder, k.bob, 'owner')
  grant(k.bob, k.bobPhone, 'device', { parent: gBob })
  grant(k.founder, k.hub, 'hub')
  grant(k.founder, k.removed, 'owner')
  expect(
    state.admit(
      signEvent(
        makeRevocation({ keys: [k.removed.pk], fleet: k.founder.pk }, now - 50),
        k.founder.sk,
      ),
      now,
    ).ok,
  ).toBe(true)
  return { state, k }
}

const subscription = {
  subscription: {
    endpoint: 'https://push.example/abc',
    keys: { p256dh: 'BPk', auth: 'xyz' },
  },
  classes: ['cards' as const],
  finishedAfter: 60,
}

describe('admission asks the authority table who may (issue 28)', () => {
  it('maps every kind Kith defines to a row of that kind, and a foreign kind to a post', () => {
    for (const [name, kind] of Object.entries(Kind)) {
      const action = actionOf({ kind, tags: [], content: '' })
      expect({ name, kind: authorityRow(action).kind }).toEqual({ name, kind })
    }
    expect(actionOf({ kind: 1, tags: [], content: 'a note' })).toBe('chat.post')
    expect(actionOf({ kind: Kind.Grant, tags: [['role', 'owner'], ['deleg']], content: '' })).toBe(
      'grant.admin',
    )
    expect(actionOf({ kind: Kind.SessionControl, tags: [], content: '{"action":"close"}' })).toBe(
      'session.close',
    )
  })

  it('refuses a push subscription from another person’s device for someone’s notifications', () => {
    const { state, k } = fleet()
    // Bob's phone asks Alice's node to push Alice's cards to it.
    const attack = signEvent(
      makePushSubscription(subscription, k.bobPhone.sk, k.aliceNode.pk, now),
      k.bobPhone.sk,
    )
    const a = state.admit(attack, now)
    expect(a.ok).toBe(false)
    if (!a.ok) {
      expect(a.error.code).toBe('restricted')
      expect(a.error.reason).toBe('not-owner')
    }
    expect(mayPushThrough(state.grants, k.bobPhone.pk, k.aliceNode.pk, now)).toBe(false)
    // Alice's own phone may, and Bob's phone through Bob's own key.
    const own = signEvent(
      makePushSubscription(subscription, k.alicePhone.sk, k.aliceNode.pk, now),
      k.alicePhone.sk,
    )
    expect(state.admit(own, now).ok).toBe(true)
    const bobs = signEvent(
      makePushSubscription(subscription, k.bobPhone.sk, k.bob.pk, now),
      k.bobPhone.sk,
    )
    expect(state.admit(bobs, now).ok).toBe(true)
  })

  it('refuses a revocation signed by a hub key, which the table lets revoke nothing', () => {
    const { state, k } = fleet()
    const rev = signEvent(
      makeRevocation({ keys: [k.bobPhone.pk], fleet: k.founder.pk }, now),
      k.hub.sk,
    )
    const a = state.admit(rev, now)
    expect(a.ok).toBe(false)
    // A hub key signs nothing but AUTH: refused outright (a hub is a hub on every chain).
    if (!a.ok) expect(a.error.reason).toBe('kind-not-allowed')
    expect(mayAct('revocation', fleetActor(state.grants, k.hub.pk, now))).toBe(false)
  })

  it('takes a fleet setting only from an admin or the founder', () => {
    const { state, k } = fleet()
    const setting = (who: K) =>
      state.admit(signEvent(makeFleetSetting(k.founder.pk, false, now), who.sk), now).ok
    expect(setting(k.bob)).toBe(false)
    expect(setting(k.alicePhone)).toBe(false)
    expect(setting(k.admin)).toBe(true)
    expect(setting(k.founder)).toBe(true)
  })

  it('admits each event exactly when mayAdmit says so for its author’s classes', () => {
    const { state, k } = fleet()
    const f = ['fleet', k.founder.pk]
    const templates = [
      { kind: Kind.Profile, tags: [], content: '{"name":"x"}' },
      { kind: Kind.ChatMessage, tags: [['h', 'ops'], f], content: 'hi' },
      { kind: Kind.SessionState, tags: [['d', 'a:ops:'], f], content: '{}' },
      { kind: Kind.PushSender, tags: [['d', 'kith-push']], content: '{}' },
      { kind: Kind.AgentControl, tags: [['h', 'ops'], f], content: '{"action":"cancel"}' },
      { kind: Kind.SessionControl, tags: [['h', 'ops'], f], content: '{"action":"close"}' },
      { kind: Kind.FleetSetting, tags: [['d', 'kith-e2e'], f], content: '' },
      { kind: 1, tags: [], content: 'a note' },
    ]
    let checked = 0
    for (const who of Object.values(k)) {
      for (const t of templates) {
        const event = signEvent({ ...t, created_at: now }, who.sk)
        const may = mayAdmit(actionOf(event), fleetActor(state.grants, who.pk, now))
        const admitted = state.admit(event, now).ok
        expect({ who: who.pk.slice(0, 8), kind: t.kind, admitted }).toEqual({
          who: who.pk.slice(0, 8),
          kind: t.kind,
          admitted: may,
        })
        checked++
      }
    }
    expect(checked).toBe(9 * 8)
  })

  it('pages nobody for a card a member signed, which the table gives to the agent alone', () => {
    const { state, k } = fleet()
    const card = (who: K) =>
      signEvent(
        makePermissionRequest(
          {
            channel: 'ops',
            fleet: k.founder.pk,
            prompt: 'a'.repeat(64),
            prompter: k.alice.pk,
            title: 'rm -rf build',
            toolKind: 'execute',
            options: [
              { optionId: 'allow', name: 'Allow once', kind: 'allow_once' },
              { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
            ],
            expires: now + 600,
            toolCallId: 't',
            sessionId: 's',
            input: 'c'.repeat(64),
            nonce: '0123456789abcdef',
          },
          now,
        ),
        who.sk,
      )
    const ctx = {
      person: k.alice.pk,
      personOf: (key: string) => personOf(state.grants, key, now),
      isAgent: (key: string) => key === k.aliceNode.pk,
      nameOf: () => 'x',
      event: () => undefined,
      fleet: k.founder.pk,
      now: () => now,
    }
    // Bob signs a "card" in Alice's turn: admitted (which agent asks is its host's to read), but
    // no notification asks Alice to answer it.
    expect(classify(card(k.bob), ctx)).toBeUndefined()
    // The same card from a key that is an agent pages her.
    expect(classify(card(k.aliceNode), ctx)?.class).toBe('cards')
  })
})
