import { describe, expect, it, onTestFinished } from 'vitest'
import { makeChatMessage } from '../../src/events/chat.js'
import { signEvent, type NostrEvent } from '../../src/events/event.js'
import { makePermissionDecision } from '../../src/events/permission-decision.js'
import { makePermissionRequest } from '../../src/events/permission-request.js'
import type { PushPayload } from '../../src/events/push.js'
import { classify, type ClassifyContext } from '../../src/notify/classify.js'
import { Notifier } from '../../src/notify/notifier.js'
import { NodeStore } from '../../src/store/node-store.js'
import { newKey } from '../helpers/secrets.js'
import { tempDir } from '../helpers/tmp.js'

// A quorum card's notifications (issue 33, kith-notify "Withdrawal"): the card's push says the
// tally; an allow that leaves it waiting replaces the notification with the new tally; it is
// withdrawn once N distinct people allowed (or an approver rejected), and not before: two
// devices of one person, or a member who is not an approver, do not make the quorum.

const now = () => Math.floor(Date.now() / 1000)

function fleet() {
  const alice = newKey()
  const laptop = newKey()
  const phone = newKey()
  const agent = newKey()
  const bob = newKey()
  const bobPhone = newKey()
  const carol = newKey()
  const carolPhone = newKey()
  const person = new Map([
    [alice.pk, alice.pk],
    [laptop.pk, alice.pk],
    [phone.pk, alice.pk],
    [agent.pk, alice.pk],
    [bob.pk, bob.pk],
    [bobPhone.pk, bob.pk],
    [carol.pk, carol.pk],
    [carolPhone.pk, carol.pk],
  ])
  const events = new Map<string, NostrEvent>()
  // The agent's approvers: alice and bob, not carol.
  const approvers = new Set([alice.pk, bob.pk])
  const ctx: ClassifyContext = {
    person: alice.pk,
    personOf: (k) => person.get(k),
    isAgent: (k) => k === agent.pk,
    nameOf: (k) => k.slice(0, 8),
    event: (id) => events.get(id),
    fleet: alice.pk,
    now,
    mayDecide: (author) => approvers.has(person.get(author) ?? ''),
    decisionsOf: (request) =>
      [...events.values()].filter(
        (e) => e.kind === 4143 && e.tags.some((t) => t[0] === 'e' && t[1] === request),
      ),
  }
  const keep = (e: NostrEvent) => (events.set(e.id, e), e)
  return { alice, laptop, phone, agent, bobPhone, carolPhone, ctx, keep }
}

describe('a quorum card’s notifications', { timeout: 60_000 }, () => {
  it('show the tally, are replaced as people allow, and withdrawn only when N people allowed', () => {
    const f = fleet()
    const home = tempDir()
    const store = new NodeStore(home)
    const notifier = new Notifier({
      store: store.notify,
      ctx: f.ctx,
      deviceSecret: f.laptop.sk,
      devicePubkey: f.laptop.pk,
      log: () => undefined,
      vapid: () => {
        throw new Error('no Web Push in this test')
      },
      webBase: 'http://127.0.0.1:7448',
      // Gathered for a minute: nothing is sent by itself while the test runs.
      coalesceMs: 60_000,
    })
    onTestFinished(async () => {
      await notifier.stop()
      store.close()
    })
    // Alice's phone by Web Push (its notification already shown), her webhook not sent yet.
    store.notify.putTarget({
      id: 'web-phone',
      type: 'webpush',
      url: 'https://push.example/x',
      classes: ['cards'],
      finishedAfter: 120,
      openBase: undefined,
      device: f.phone.pk,
      subscription: JSON.stringify({ endpoint: 'https://push.example/x', keys: {} }),
      createdAt: now(),
    })
    store.notify.putTarget({
      id: 'hook',
      type: 'webhook',
      url: 'http://127.0.0.1:9/h',
      classes: ['cards'],
      finishedAfter: 120,
      fullText: false,
      openBase: undefined,
      device: undefined,
      subscription: undefined,
      createdAt: now(),
    })
    const prompt = f.keep(
      signEvent(
        makeChatMessage({ channel: 'ops', text: '@deploy ship it' }, now() - 5),
        f.laptop.sk,
      ),
    )
    const card = f.keep(
      signEvent(
        makePermissionRequest(
          {
            channel: 'ops',
            fleet: f.alice.pk,
            prompt: prompt.id,
            prompter: prompt.pubkey,
            title: 'deploy prod',
            toolKind: 'execute',
            options: [
              { optionId: 'allow', name: 'Allow', kind: 'allow_once' },
              { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
            ],
            expires: now() + 300,
            toolCallId: 't1',
            sessionId: 's1',
            input: 'ab'.repeat(32),
            nonce: '0123456789abcdef',
            quorum: { n: 2, for: ['execute'] },
          },
          now(),
        ),
        f.agent.sk,
      ),
    )
    expect(classify(card, f.ctx)?.payload.body).toBe(
      '#ops · execute · 👥 0 of 2 — waiting for 2 more approvers',
    )
    notifier.observe(card)
    store.notify.setState(card.id, 'web-phone', 'sent', Date.now())
    const rows = () =>
      [card.id, `tally:${card.id}:1`, `tally:${card.id}:2`, `withdraw:${card.id}`].flatMap((id) =>
        store.notify
          .deliveriesOf(id)
          .map((d) => [id.split(':')[0], d.target, d.state, JSON.parse(d.payload) as PushPayload]),
      )
    // In a fixed order (the store's is by row): the deliveries as `id target state`.
    const states = () =>
      rows()
        .map(([id, target, state]) => `${id as string} ${target as string} ${state as string}`)
        .sort()
    const decide = (sk: Uint8Array, optionId: string) =>
      f.keep(
        signEvent(
          makePermissionDecision(
            {
              request: { id: card.id, channel: 'ops', agent: f.agent.pk },
              fleet: f.alice.pk,
              optionId,
            },
            now(),
          ),
          sk,
        ),
      )
    expect(states()).toEqual([`${card.id} web-phone sent`, `${card.id} hook pending`].sort())

    // Carol is a member, not an approver: her allow changes nothing.
    notifier.observe(decide(f.carolPhone.sk, 'allow'))
    expect(states()).toEqual([`${card.id} web-phone sent`, `${card.id} hook pending`].sort())

    // Alice allows from her laptop: 1 of 2. The phone's notification is replaced by the tally (the
    // card's tag), the webhook's unsent one goes with the tally instead.
    notifier.observe(decide(f.laptop.sk, 'allow'))
    expect(states()).toEqual(
      [
        `${card.id} web-phone sent`,
        `${card.id} hook withdrawn`,
        'tally web-phone pending',
        'tally hook pending',
      ].sort(),
    )
    const tally = rows().find(([id]) => id === 'tally')![3] as Extract<
      PushPayload,
      { type: 'notify' }
    >
    expect(tally).toMatchObject({
      tag: card.id,
      body: '#ops · execute · 👥 1 of 2 — waiting for another approver',
      card: { id: card.id, reject: 'reject' },
    })

    // Her phone allows too: one person, still 1 of 2, nothing withdrawn.
    notifier.observe(decide(f.phone.sk, 'allow'))
    expect(states()).toEqual(
      [
        `${card.id} web-phone sent`,
        `${card.id} hook withdrawn`,
        'tally web-phone pending',
        'tally hook pending',
      ].sort(),
    )

    // Bob allows: two people, the card is answered: nothing more goes out, the phone closes it.
    notifier.observe(decide(f.bobPhone.sk, 'allow'))
    expect(states()).toEqual(
      [
        `${card.id} web-phone sent`,
        `${card.id} hook withdrawn`,
        'tally web-phone withdrawn',
        'tally hook withdrawn',
        'withdraw web-phone pending',
      ].sort(),
    )
    expect(rows().at(-1)![3]).toEqual({ type: 'withdraw', tag: card.id })
  })
})
