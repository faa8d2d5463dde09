import { describe, expect, it, onTestFinished } from 'vitest'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { HubLink } from '../../src/link/hub-link.js'
import { OutboxPump } from '../../src/node/outbox-pump.js'
import { NodeStore } from '../../src/store/node-store.js'
import { startTestHub } from '../helpers/hub.js'
import { newSecret, signTestGrant } from '../helpers/secrets.js'
import { tempDir } from '../helpers/tmp.js'

// The node's outbox, directly: a real NodeStore in a temp dir, a real hub on port 0, a real
// HubLink, and the OutboxPump between them.

const now = () => Math.floor(Date.now() / 1000)

async function setUp(hub: Parameters<typeof startTestHub>[0] = {}) {
  const t = await startTestHub(hub)
  const deviceSk = newSecret()
  const grant = signTestGrant(
    { subject: publicKeyOf(deviceSk), role: 'device', fleet: t.owner },
    t.ownerSk,
    now() - 100,
  )
  const founder = await t.member()
  founder.send(['EVENT', grant])
  expect((await founder.ok(grant.id))[2]).toBe(true)
  const store = new NodeStore(tempDir())
  onTestFinished(() => store.close())
  const delivered: string[] = []
  const log: string[] = []
  const pump = new OutboxPump(store, {
    now,
    log: (l) => log.push(l),
    stopped: () => false,
    delivered: (id) => delivered.push(id),
  })
  const link = new HubLink({
    url: t.url,
    deviceSecret: deviceSk,
    chain: () => [],
    kinds: [9],
    fullKinds: [],
    cursor: () => undefined,
    saveCursor: () => undefined,
    deliver: () => Promise.resolve(),
    log: () => undefined,
  })
  onTestFinished(() => link.stop())
  const post = (content: string, sk = deviceSk): NostrEvent =>
    signEvent({ kind: 9, created_at: now(), tags: [['h', 'general']], content }, sk)
  return { t, store, pump, link, post, delivered, log }
}

describe('OutboxPump', () => {
  it('keeps what no hub took, then sends it oldest first, recording OK true and OK false alike', async () => {
    const { t, store, pump, link, post, delivered, log } = await setUp()
    const first = post('one')
    const second = post('two')
    const stranger = post('not a member', newSecret())
    const last = post('three')
    // No hub is connected: it is queued, and the caller is told so at once.
    expect(await pump.send(first, [link], 5000)).toBeUndefined()
    for (const e of [second, stranger, last]) store.enqueue(e, now())
    expect(store.pendingFor(t.url).map((e) => e.id)).toEqual(
      [first, second, stranger, last].map((e) => e.id),
    )
    link.start()
    await expect.poll(() => link.authenticated, { timeout: 10_000 }).toBe(true)
    pump.pump(link)
    await expect.poll(() => store.pendingFor(t.url).length, { timeout: 10_000 }).toBe(0)
    // Accepted ones in the order they were queued; the refused one is recorded, not retried.
    expect(delivered).toEqual([first.id, second.id, last.id])
    const refused = store.deliveries(stranger.id)
    expect(refused).toHaveLength(1)
    expect(refused[0]).toMatchObject({ hub: t.url, state: 'refused' })
    expect(refused[0]!.message).toMatch(/^[a-z-]+: /)
    expect(store.refusals().map((r) => r.eventId)).toEqual([stranger.id])
    expect(log.some((l) => l.includes(`refused ${stranger.id.slice(0, 12)}`))).toBe(true)
  })

  it('send: with a hub connected, resolves with its answer', async () => {
    const { t, pump, link, post, store } = await setUp()
    link.start()
    await expect.poll(() => link.authenticated, { timeout: 10_000 }).toBe(true)
    const e = post('hello')
    expect(await pump.send(e, [link], 10_000)).toEqual({ hub: t.url, ok: true, message: '' })
    expect(store.deliveries(e.id)).toMatchObject([{ hub: t.url, state: 'ok' }])
    expect(store.pendingFor(t.url)).toEqual([])
  })

  it('keeps what a hub said "not now" to (rate-limited) and sends it again, never refusing it', async () => {
    // One event a second per person, two at once: the third and fourth are answered
    // `rate-limited:` (link/outbox-answer.ts: retry), and must go later, not be refused for good.
    const { t, pump, link, post, store, delivered, log } = await setUp({
      limits: { eventsPerSecond: 1, eventBurst: 2, hubEventBurst: 10_000 },
    })
    const events = [1, 2, 3, 4].map((i) => post(`burst ${i}`))
    for (const e of events) store.enqueue(e, now())
    link.start()
    await expect.poll(() => link.authenticated, { timeout: 10_000 }).toBe(true)
    pump.pump(link)
    await expect.poll(() => delivered.length, { timeout: 30_000 }).toBe(events.length)
    expect(delivered).toEqual(events.map((e) => e.id))
    expect(store.refusals()).toEqual([])
    expect(store.pendingFor(t.url)).toEqual([])
    // The hub did say "not now" on the way: the retry is what got them there.
    expect(log.some((l) => /will retry\): rate-limited: /.test(l))).toBe(true)
  })
})
