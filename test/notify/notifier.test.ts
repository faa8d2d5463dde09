import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { makeChatMessage } from '../../src/events/chat.js'
import { signEvent, type NostrEvent } from '../../src/events/event.js'
import { noticeTag } from '../../src/events/agent-binding.js'
import { makePermissionRequest } from '../../src/events/permission-request.js'
import { makePermissionDecision } from '../../src/events/permission-decision.js'
import { classify, staleSeconds, type ClassifyContext } from '../../src/notify/classify.js'
import { Notifier } from '../../src/notify/notifier.js'
import { NodeStore } from '../../src/store/node-store.js'
import { notifyStatus } from '../../src/node/notifications.js'
import { notifyLines } from '../../src/cli/commands/status.js'
import { startEndpoint } from '../helpers/push-service.js'
import { newKey } from '../helpers/secrets.js'
import { tempDir } from '../helpers/tmp.js'

const now = () => Math.floor(Date.now() / 1000)

/** A fleet of two people: alice (this node's) with a device and an agent, bob with a device. */
function fleet() {
  const alice = newKey()
  const aliceDevice = newKey()
  const agent = newKey()
  const bob = newKey()
  const bobDevice = newKey()
  const person = new Map([
    [alice.pk, alice.pk],
    [aliceDevice.pk, alice.pk],
    [agent.pk, alice.pk],
    [bob.pk, bob.pk],
    [bobDevice.pk, bob.pk],
  ])
  const names = new Map([
    [aliceDevice.pk, 'laptop'],
    [agent.pk, 'claude'],
    [bobDevice.pk, 'bob-phone'],
  ])
  const events = new Map<string, NostrEvent>()
  const ctx: ClassifyContext = {
    person: alice.pk,
    personOf: (k) => person.get(k),
    isAgent: (k) => k === agent.pk,
    nameOf: (k) => names.get(k) ?? k.slice(0, 8),
    event: (id) => events.get(id),
    fleet: alice.pk,
    now,
  }
  const keep = (e: NostrEvent) => (events.set(e.id, e), e)
  return { alice, aliceDevice, agent, bob, bobDevice, ctx, keep }
}

function card(f: ReturnType<typeof fleet>, prompt: NostrEvent, expires = now() + 300) {
  return signEvent(
    makePermissionRequest(
      {
        channel: 'ops',
        fleet: f.alice.pk,
        prompt: prompt.id,
        prompter: prompt.pubkey,
        title: 'rm -rf build',
        toolKind: 'execute',
        options: [
          { optionId: 'yes', name: 'Allow', kind: 'allow_once' },
          { optionId: 'no', name: 'Reject', kind: 'reject_once' },
        ],
        expires,
        toolCallId: 't1',
        sessionId: 's1',
        input: 'ab'.repeat(32),
        nonce: '0123456789abcdef',
      },
      now(),
    ),
    f.agent.sk,
  )
}

const chat = (
  sk: Uint8Array,
  text: string,
  at = now(),
  extra: Partial<Parameters<typeof makeChatMessage>[0]> = {},
) => signEvent(makeChatMessage({ channel: 'ops', text, ...extra }, at), sk)

describe('what notifies (classify)', () => {
  it('cards of this person’s agents or turns; errors; finished turns with their length; mentions by others; nothing stale', () => {
    const f = fleet()
    const t = now()
    const prompt = f.keep(chat(f.aliceDevice.sk, '@claude fix it', t - 300))
    const c = classify(card(f, prompt), f.ctx)
    expect(c).toMatchObject({
      class: 'cards',
      payload: {
        title: 'claude asks: rm -rf build',
        card: { allow: 'yes', reject: 'no', channel: 'ops' },
      },
    })
    // In a fleet that seals, a card says so: the service worker then seals the decision.
    expect(classify(card(f, prompt), { ...f.ctx, seals: () => true })?.payload.card?.sealed).toBe(
      true,
    )
    // An expired card, and a card of another fleet, notify nobody.
    expect(classify(card(f, prompt, now() - 1), f.ctx)).toBeUndefined()
    // A reply by the agent to alice's prompt: finished, with how long it ran.
    const reply = chat(f.agent.sk, 'done: 3 files', t, { replyTo: { id: prompt.id } })
    expect(classify(reply, f.ctx)).toMatchObject({
      class: 'finished',
      ranSeconds: 300,
      payload: { body: 'done: 3 files' },
    })
    // A refused notice (its outcome tag) is an error; an informational notice is nothing.
    const warnT = makeChatMessage(
      {
        channel: 'ops',
        text: '⚠ claude did not answer: agent crashed',
        replyTo: { id: prompt.id },
      },
      now(),
    )
    warnT.tags.push([...noticeTag])
    expect(
      classify(
        signEvent(
          { ...warnT, tags: [...warnT.tags, ['outcome', 'refused', 'queued']] },
          f.agent.sk,
        ),
        f.ctx,
      ),
    ).toMatchObject({ class: 'errors' })
    // A failed turn (its outcome tag) is an error whatever its length; a cancelled one is nothing.
    const failedT = makeChatMessage(
      {
        channel: 'ops',
        text: '⚠ claude did not answer: agent crashed',
        replyTo: { id: prompt.id },
      },
      now(),
    )
    failedT.tags.push(['outcome', 'failed', 'crashed'])
    expect(classify(signEvent(failedT, f.agent.sk), f.ctx)).toMatchObject({ class: 'errors' })
    const cancelledT = {
      ...failedT,
      content: '⏹ claude: cancelled',
      tags: [...failedT.tags.slice(0, -1), ['outcome', 'cancelled', 'cancelled']],
    }
    expect(classify(signEvent(cancelledT, f.agent.sk), f.ctx)).toBeUndefined()
    const info = signEvent({ ...warnT, content: 'ℹ new session' }, f.agent.sk)
    expect(classify(info, f.ctx)).toBeUndefined()
    // The outcome tag decides, not the text: a notice that merely starts with ⚠ pages nobody,
    // and one with a failed or refused outcome pages whatever its text says.
    expect(classify(signEvent(warnT, f.agent.sk), f.ctx)).toBeUndefined()
    for (const outcome of [
      ['outcome', 'failed', 'error'],
      ['outcome', 'refused', 'still-open'],
    ])
      expect(
        classify(
          signEvent(
            { ...warnT, content: 'the answer was not acted on', tags: [...warnT.tags, outcome] },
            f.agent.sk,
          ),
          f.ctx,
        ),
      ).toMatchObject({ class: 'errors', payload: { body: 'the answer was not acted on' } })
    // A mention of alice (owner key or device) by bob; not by alice herself; not when stale.
    expect(
      classify(chat(f.bobDevice.sk, 'look', now(), { mentions: [f.aliceDevice.pk] }), f.ctx),
    ).toMatchObject({ class: 'mentions', payload: { title: 'bob-phone in #ops' } })
    expect(
      classify(chat(f.aliceDevice.sk, 'note to self', now(), { mentions: [f.alice.pk] }), f.ctx),
    ).toBeUndefined()
    expect(
      classify(
        chat(f.bobDevice.sk, 'old', now() - staleSeconds - 5, { mentions: [f.alice.pk] }),
        f.ctx,
      ),
    ).toBeUndefined()
    // Bob's prompt to bob's agent is not alice's business; a reply to bob is not hers either.
    const bobPrompt = f.keep(chat(f.bobDevice.sk, '@claude hi', now() - 10))
    expect(
      classify(chat(f.agent.sk, 'hi bob', now(), { replyTo: { id: bobPrompt.id } }), f.ctx),
    ).toBeUndefined()
  })
})

describe('what a third-party target is told in a sealed fleet (classify, brief)', () => {
  it('every notice carries a brief with no message text or tool call; an unsealed fleet none', () => {
    const f = fleet()
    const sealed = { ...f.ctx, seals: () => true }
    const prompt = f.keep(chat(f.aliceDevice.sk, '@claude rotate the key hunter2', now() - 120))
    const failedT = makeChatMessage(
      { channel: 'ops', text: '⚠ hunter2 failed', replyTo: { id: prompt.id } },
      now(),
    )
    failedT.tags.push(['outcome', 'failed', 'crashed'])
    const events = [
      card(f, prompt),
      signEvent(failedT, f.agent.sk),
      chat(f.agent.sk, 'done: hunter2 rotated', now(), { replyTo: { id: prompt.id } }),
      chat(f.bobDevice.sk, 'the password is hunter2', now(), { mentions: [f.alice.pk] }),
    ]
    const notices = events.map((e) => classify(e, sealed)!)
    expect(notices.map((n) => [n.class, n.payload.brief])).toEqual([
      ['cards', { title: 'claude asks for permission', body: '#ops' }],
      ['errors', { title: 'claude in #ops', body: 'an error: open Kith to read it' }],
      [
        'finished',
        { title: 'claude finished in #ops (2 min)', body: 'open Kith to read the answer' },
      ],
      ['mentions', { title: 'bob-phone mentioned you in #ops', body: 'open Kith to read it' }],
    ])
    // The full text stays for the person's own devices (Web Push, the desktop).
    expect(notices.map((n) => n.payload.title + n.payload.body).join()).toMatch(/rm -rf build/)
    expect(notices.map((n) => n.payload.body).join()).toMatch(/hunter2/)
    // Without sealing there is nothing to keep back, so no brief.
    for (const e of events) expect(classify(e, f.ctx)!.payload.brief).toBeUndefined()
  })
})

describe('the notifier (real node.db, real HTTP endpoints)', { timeout: 60_000 }, () => {
  function start(f: ReturnType<typeof fleet>, opts: { coalesceMs?: number } = {}) {
    const home = tempDir()
    const store = new NodeStore(home)
    const lines: string[] = []
    const notifier = new Notifier({
      store: store.notify,
      ctx: f.ctx,
      deviceSecret: f.aliceDevice.sk,
      devicePubkey: f.aliceDevice.pk,
      log: (l) => lines.push(l),
      vapid: () => {
        throw new Error('no Web Push in this test')
      },
      webBase: 'http://127.0.0.1:7448',
      ...opts,
    })
    onTestFinished(async () => {
      await notifier.stop()
      store.close()
    })
    return { store, notifier, lines, home }
  }

  /** A target of `type` taking `classes`, added as `kith notify add` adds one. */
  function target(
    store: NodeStore,
    id: string,
    type: 'webhook' | 'desktop',
    url: string,
    classes: string[],
    finishedAfter = 120,
    fullText = false,
  ): void {
    store.notify.putTarget({
      id,
      type,
      url,
      classes,
      finishedAfter,
      fullText,
      openBase: undefined,
      device: undefined,
      subscription: undefined,
      createdAt: now(),
    })
  }

  it('in a sealed fleet a webhook gets the brief, one added with --full-text the text', async () => {
    const f = fleet()
    f.ctx.seals = () => true
    const brief = await startEndpoint()
    const full = await startEndpoint()
    const { store, notifier } = start(f)
    target(store, 'brief', 'webhook', `${brief.url}/h`, ['mentions'])
    target(store, 'full', 'webhook', `${full.url}/h`, ['mentions'], 120, true)
    const m = chat(f.bobDevice.sk, 'the password is hunter2', now(), { mentions: [f.alice.pk] })
    notifier.observe(m)
    expect(JSON.parse((await brief.nth(0)).body.toString())).toMatchObject({
      class: 'mentions',
      event: m.id,
      title: 'bob-phone mentioned you in #ops',
      body: 'open Kith to read it',
    })
    expect(brief.received[0]!.body.toString()).not.toMatch(/hunter2/)
    expect(JSON.parse((await full.nth(0)).body.toString())).toMatchObject({
      title: 'bob-phone in #ops',
      body: 'the password is hunter2',
    })
    // kith notify list and kith status say which target reads the text.
    const lines = notifyLines(notifyStatus(store))
    expect(lines.find((l) => l.includes(' full '))).toMatch(/\[full text\]/)
    expect(lines.find((l) => l.includes(' brief '))).not.toMatch(/full text/)
  })

  it('retries a failing endpoint with backoff until it answers, and shows the error meanwhile', async () => {
    const f = fleet()
    const flaky = await startEndpoint({ answer: (n) => (n < 2 ? 503 : 200) })
    const { store, notifier } = start(f)
    target(store, 'hook', 'webhook', `${flaky.url}/h`, ['mentions'], 120)
    const m = chat(f.bobDevice.sk, 'are you there?', now(), { mentions: [f.alice.pk] })
    notifier.observe(m)
    await flaky.nth(0)
    await expect
      .poll(() => store.notify.target('hook')?.lastError)
      .toBe('the webhook answered 503: refused by the test')
    expect(store.notify.deliveriesOf(m.id)[0]).toMatchObject({ state: 'pending', attempts: 1 })
    const third = await flaky.nth(2, 20_000)
    expect(JSON.parse(third.body.toString())).toMatchObject({
      class: 'mentions',
      event: m.id,
      link: `http://127.0.0.1:7448/#/c/ops/t/${m.id}`,
    })
    await expect.poll(() => store.notify.deliveriesOf(m.id)[0]?.state).toBe('sent')
    expect(store.notify.target('hook')?.lastError).toBeUndefined()
    // Observed again (a second hub delivering the same event): never sent twice.
    notifier.observe(m)
    await notifier.pass()
    expect(flaky.received).toHaveLength(3)
  })

  it('gathers a burst that keeps coming a few at a time until it pauses, at most a second', async () => {
    const f = fleet()
    const hook = await startEndpoint({ answer: () => 200 })
    // A notifier whose start-up pass has run, then whose timers and clock the test moves (the
    // HTTP stays real).
    const fakeTimed = async (path: string) => {
      const { store, notifier } = start(f, { coalesceMs: 100 })
      target(store, 'hook', 'webhook', `${hook.url}${path}`, ['mentions'])
      await new Promise((resolve) => setTimeout(resolve, 0))
      await notifier.pass()
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] })
      onTestFinished(() => {
        vi.useRealTimers()
      })
      return (i: number) =>
        notifier.observe(chat(f.bobDevice.sk, `ping ${i}`, now() + i, { mentions: [f.alice.pk] }))
    }

    // Six mentions 60 ms apart: 300 ms in all, never a 100 ms pause. Had a pass run before the
    // pause, the first push would hold fewer than six.
    let mention = await fakeTimed('/a')
    for (let i = 0; i < 6; i++) {
      mention(i)
      vi.advanceTimersByTime(60)
    }
    vi.advanceTimersByTime(100)
    vi.useRealTimers()
    const summary = JSON.parse((await hook.nth(0)).body.toString()) as Record<string, unknown>
    expect(summary).toMatchObject({ class: 'summary', title: '6 notifications' })

    // One that never pauses is sent a second after it began: the 17 that came by then (one per
    // 60 ms from 0 to 960 ms); the 18th waits for the next pass.
    mention = await fakeTimed('/b')
    for (let i = 0; i < 18; i++) {
      mention(i)
      vi.advanceTimersByTime(60)
    }
    vi.useRealTimers()
    const first = JSON.parse((await hook.nth(1)).body.toString()) as Record<string, unknown>
    expect(first).toMatchObject({ class: 'summary', title: '17 notifications' })
    expect(hook.received[1]!.path).toBe('/b')
  })

  it('folds a burst into one summary, leaves a withdrawn card unsent, and honours each target’s threshold', async () => {
    const f = fleet()
    const hook = await startEndpoint({ answer: () => 200 })
    const quick = await startEndpoint({ answer: () => 200 })
    const { store, notifier } = start(f, { coalesceMs: 50 })
    target(store, 'hook', 'webhook', `${hook.url}/h`, ['mentions', 'cards', 'finished'], 600)
    target(store, 'quick', 'webhook', `${quick.url}/q`, ['finished'], 60)
    for (let i = 0; i < 5; i++)
      notifier.observe(chat(f.bobDevice.sk, `ping ${i}`, now() + i, { mentions: [f.alice.pk] }))
    const summary = JSON.parse((await hook.nth(0)).body.toString()) as Record<string, unknown>
    expect(summary).toMatchObject({
      class: 'summary',
      title: '5 notifications',
      body: '5 mentions',
    })
    await notifier.pass()
    expect(hook.received).toHaveLength(1)

    // A card answered before the pass that would send it: withdrawn, never sent.
    const prompt = f.keep(chat(f.aliceDevice.sk, '@claude go', now() - 200))
    const c = f.keep(card(f, prompt))
    notifier.observe(c)
    notifier.observe(
      signEvent(
        makePermissionDecision(
          {
            request: { id: c.id, channel: 'ops', agent: f.agent.pk },
            fleet: f.alice.pk,
            optionId: 'yes',
          },
          now(),
        ),
        f.aliceDevice.sk,
      ),
    )
    await notifier.pass()
    expect(store.notify.deliveriesOf(c.id)).toEqual([
      expect.objectContaining({ state: 'withdrawn' }),
    ])

    // A 200 s turn: past quick's 60 s, short of hook's 600 s.
    notifier.observe(
      chat(f.agent.sk, 'finished the refactor', now(), { replyTo: { id: prompt.id } }),
    )
    expect(JSON.parse((await quick.nth(0)).body.toString())).toMatchObject({
      class: 'finished',
      body: 'finished the refactor',
    })
    await notifier.pass()
    expect(hook.received).toHaveLength(1)
  })

  it('withdraws a card only for a decision its host would act on: not for a non-approver’s, nor an unbound one', async () => {
    const f = fleet()
    const hook = await startEndpoint({ answer: () => 200 })
    // Gathered for a minute: nothing is sent while the decisions below arrive.
    const { store, notifier, lines } = start(f, { coalesceMs: 60_000 })
    target(store, 'hook', 'webhook', `${hook.url}/h`, ['cards'])
    const prompt = f.keep(chat(f.aliceDevice.sk, '@claude go', now() - 10))
    const c = f.keep(card(f, prompt))
    notifier.observe(c)
    const state = () => store.notify.deliveriesOf(c.id).map((d) => d.state)
    expect(state()).toEqual(['pending'])
    const decide = (
      sk: Uint8Array,
      optionId: string,
      over: { channel?: string; at?: number } = {},
    ) =>
      signEvent(
        makePermissionDecision(
          {
            request: { id: c.id, channel: over.channel ?? 'ops', agent: f.agent.pk },
            fleet: f.alice.pk,
            optionId,
          },
          over.at ?? now(),
        ),
        sk,
      )
    // The attack: bob (a member, not an approver of alice's agent) rejects the card, which its
    // host refuses; alice must still be told of it.
    notifier.observe(decide(f.bobDevice.sk, 'no'))
    expect(state()).toEqual(['pending'])
    expect(lines.join('\n')).toMatch(/withdraws nothing: its author may not approve/)
    // Alice's own, but not bound to the card: another channel, a date after it expired, no option.
    notifier.observe(decide(f.aliceDevice.sk, 'yes', { channel: 'elsewhere' }))
    notifier.observe(decide(f.aliceDevice.sk, 'yes', { at: now() + 400 }))
    notifier.observe(decide(f.aliceDevice.sk, 'maybe'))
    expect(state()).toEqual(['pending'])
    // A decision the host acts on withdraws it.
    notifier.observe(decide(f.aliceDevice.sk, 'yes'))
    expect(state()).toEqual(['withdrawn'])
    expect(hook.received).toHaveLength(0)
  })

  it('gives up on a card that expires while its endpoint keeps failing', async () => {
    const f = fleet()
    const down = await startEndpoint({ answer: () => 503 })
    const { store, notifier } = start(f)
    target(store, 'hook', 'webhook', `${down.url}/h`, ['cards'], 120)
    const prompt = f.keep(chat(f.aliceDevice.sk, '@claude go', now()))
    const c = card(f, prompt, now() + 2)
    notifier.observe(c)
    await expect
      .poll(() => store.notify.deliveriesOf(c.id)[0], { timeout: 15_000 })
      .toMatchObject({ state: 'withdrawn', lastError: 'expired before it could be sent' })
    expect(down.received.length).toBeGreaterThanOrEqual(1)
  })

  it('shows desktop notifications through notify-send', async () => {
    const f = fleet()
    // A stand-in for the OS's notify-send (this machine may have none): it records its arguments.
    const bin = join(tempDir(), 'bin')
    mkdirSync(bin)
    const record = join(bin, 'calls.txt')
    writeFileSync(join(bin, 'notify-send'), `#!/bin/sh\nprintf '%s\\n' "$@" >> '${record}'\n`)
    chmodSync(join(bin, 'notify-send'), 0o755)
    const path = process.env.PATH
    process.env.PATH = `${bin}:${path}`
    onTestFinished(() => {
      process.env.PATH = path
    })
    const { store, notifier } = start(f)
    target(store, 'desk', 'desktop', 'desktop', ['mentions'], 120)
    notifier.observe(chat(f.bobDevice.sk, 'lunch?', now(), { mentions: [f.alice.pk] }))
    await expect.poll(() => store.notify.target('desk')?.lastOk, { timeout: 10_000 }).toBeDefined()
    expect(readFileSync(record, 'utf8').split('\n')).toEqual([
      '--app-name=Kith',
      '--urgency=normal',
      'bob-phone in #ops',
      'lunch?',
      '',
    ])
  })
})
