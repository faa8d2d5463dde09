import { describe, expect, it, onTestFinished } from 'vitest'
import type { NostrEvent } from '../../src/events/event.js'
import { HubLink } from '../../src/link/hub-link.js'
import WebSocket, { WebSocketServer } from 'ws'
import type { AddressInfo } from 'node:net'
import { signAuthEvent } from '../../src/events/nip42.js'
import { maxRefusals, reconcile, type EventKey } from '../../src/link/reconcile.js'
import { RelayClient } from '../../src/link/relay-client.js'
import { startTestHub, type TestHub } from '../helpers/hub.js'

const now = () => Math.floor(Date.now() / 1000)

/** Publishes `events` through an authenticated member connection. */
async function publish(t: TestHub, events: NostrEvent[]) {
  const c = await t.member()
  for (const e of events) {
    c.send(['EVENT', e])
    expect((await c.ok(e.id))[2]).toBe(true)
  }
}

/**
 * A node that was live until a minute ago and holds `held`; returns what its link delivers on
 * connecting again, and its log.
 */
async function reconnect(t: TestHub, held: NostrEvent[], localKeys: boolean) {
  const delivered: NostrEvent[] = []
  const log: string[] = []
  const mine: EventKey[] = held.map((e) => ({ created_at: e.created_at, id: e.id }))
  const link = new HubLink({
    url: t.url,
    deviceSecret: t.ownerSk,
    chain: () => [],
    kinds: [9],
    fullKinds: [],
    cursor: () => now() - 60,
    saveCursor: () => undefined,
    deliver: (events) => {
      delivered.push(...events)
      return Promise.resolve()
    },
    log: (l) => log.push(l),
    ...(localKeys ? { localKeys: () => mine } : {}),
  })
  onTestFinished(() => link.stop())
  link.start()
  await expect.poll(() => link.state, { timeout: 15_000 }).toBe('live')
  return { delivered, log }
}

describe('catch-up by NIP-77 reconciliation', () => {
  it('catches up an event that reached the hub two hours late, which paging misses', async () => {
    const t = await startTestHub()
    const old = Array.from({ length: 5 }, (_, i) =>
      t.sign({ kind: 9, created_at: now() - 3 * 3600 + i, tags: [['h', 'ops']], content: `${i}` }),
    )
    // Written two hours ago on a machine that was offline, it reaches the hub only now, while
    // the node is away: its created_at is before the node's cursor and the paging overlap.
    const late = t.sign({
      kind: 9,
      created_at: now() - 2 * 3600,
      tags: [['h', 'ops']],
      content: 'late',
    })
    await publish(t, [...old, late])

    const paged = await reconnect(t, old, false)
    expect(paged.delivered.map((e) => e.id)).not.toContain(late.id)

    const reconciled = await reconnect(t, old, true)
    expect(reconciled.delivered.map((e) => e.id)).toEqual([late.id])
    expect(reconciled.log.join('\n')).toMatch(
      /caught up with ws:\S+: reconciled in \d+ rounds: 1 events/,
    )
  })

  it('pages instead when the hub refuses even the smallest part (a second over its limit)', async () => {
    const t = await startTestHub({ limits: { negMaxItems: 3 } })
    // Five events in one second: no cut by time makes a part the hub takes.
    const at = now() - 30
    const events = Array.from({ length: 5 }, (_, i) =>
      t.sign({ kind: 9, created_at: at, tags: [['h', 'ops']], content: `${i}` }),
    )
    await publish(t, events)
    const { delivered, log } = await reconnect(t, [], true)
    expect(log.join('\n')).toMatch(
      /refused reconciliation \(.*blocked: the filter matches more than 3 events/,
    )
    expect(delivered.map((e) => e.id).sort()).toEqual(events.map((e) => e.id).sort())
  })
})

describe('reconcile, a large set in two halves', () => {
  it('finds exactly what each side lacks, on both sides of the median and at its edge', async () => {
    const t = await startTestHub()
    const base = now() - 100_000
    // 2,400 events, two per second, split from 1,000 keys (20,000 by default; signing that many
    // here would take most of a minute): the halves cut at a second that holds two events.
    const all = Array.from({ length: 2_400 }, (_, i) =>
      t.sign({ kind: 9, created_at: base + (i >> 1), tags: [['h', 'ops']], content: `m${i}` }),
    )
    t.hub.store.insertBatch(all)
    const median = base + 600
    const lacking = new Set([all[0]!, all[1_199]!, all[1_200]!, all[1_201]!, all[2_399]!])
    expect([...lacking].some((e) => e.created_at === median)).toBe(true)
    const extra = t.sign({
      kind: 9,
      created_at: median,
      tags: [['h', 'ops']],
      content: 'only here',
    })
    const mine: EventKey[] = [...all.filter((e) => !lacking.has(e)), extra].map((e) => ({
      created_at: e.created_at,
      id: e.id,
    }))
    const client = await RelayClient.connect(new WebSocket(t.url), { url: t.url })
    onTestFinished(() => client.close())
    const challenge = await client.challenge()
    expect((await client.auth(signAuthEvent(t.url, challenge!, t.ownerSk))).ok).toBe(true)
    const r = await reconcile(client, { kinds: [9] }, mine, 60_000, { splitAtKeys: 1_000 })
    expect(r.need.sort()).toEqual([...lacking].map((e) => e.id).sort())
    expect(r.have).toEqual([extra.id])
  })
})

describe('reconcile against a relay that refuses large sets', () => {
  it('cuts a part the relay blocks as too large in two until each is taken, and finds exactly what is missing', async () => {
    // A hub that reconciles at most 500 events at once; 2,400 stored, over 1,200 seconds.
    const t = await startTestHub({ limits: { negMaxItems: 500 } })
    const base = now() - 100_000
    const all = Array.from({ length: 2_400 }, (_, i) =>
      t.sign({ kind: 9, created_at: base + (i >> 1), tags: [['h', 'ops']], content: `m${i}` }),
    )
    t.hub.store.insertBatch(all)
    const lacking = new Set([all[3]!, all[1_000]!, all[2_398]!])
    const mine: EventKey[] = all
      .filter((e) => !lacking.has(e))
      .map((e) => ({ created_at: e.created_at, id: e.id }))
    const client = await RelayClient.connect(new WebSocket(t.url), { url: t.url })
    onTestFinished(() => client.close())
    const challenge = await client.challenge()
    expect((await client.auth(signAuthEvent(t.url, challenge!, t.ownerSk))).ok).toBe(true)
    // Before, the one reconciliation was refused ("blocked: the filter matches more than 500 events")
    // and the whole catch-up failed: a store past the hub's cap could never reconcile.
    const r = await reconcile(client, { kinds: [9] }, mine, 60_000)
    expect(r.need.sort()).toEqual([...lacking].map((e) => e.id).sort())
    expect(r.have).toEqual([])
    // A side that holds nothing cuts by time instead, and fetches everything.
    const empty = await reconcile(client, { kinds: [9], since: base }, [], 60_000)
    expect(empty.need.sort()).toEqual(all.map((e) => e.id).sort())
  })
})

describe('reconcile against a relay that calls sets too large to make it work', () => {
  it('gives up after maxRefusals such answers, not after a reconciliation for every cut', async () => {
    // An adversarial relay: "blocked" for any range wider than 100 s, else "nothing here". Every
    // cut in two is refused again until the parts are narrow: a tree of ~2,000 reconciliations.
    const relay = new WebSocketServer({ host: '127.0.0.1', port: 0 })
    onTestFinished(() => relay.close())
    await new Promise((resolve) => relay.once('listening', resolve))
    let opened = 0
    relay.on('connection', (ws) => {
      ws.on('message', (data: Buffer) => {
        const msg = JSON.parse(data.toString()) as [
          string,
          string,
          { since?: number; until?: number },
        ]
        if (msg[0] !== 'NEG-OPEN') return
        opened++
        const { since = 0, until = Infinity } = msg[2]
        ws.send(
          JSON.stringify(
            until - since > 100
              ? ['NEG-ERR', msg[1], 'blocked: too big']
              : ['NEG-MSG', msg[1], '61'],
          ),
        )
      })
    })
    const url = `ws://127.0.0.1:${(relay.address() as AddressInfo).port}`
    const client = await RelayClient.connect(new WebSocket(url), { url })
    onTestFinished(() => client.close())
    const since = now() - 100_000
    await expect(reconcile(client, { kinds: [9], since }, [], 60_000)).rejects.toMatchObject({
      reason: 'too-large',
    })
    // Each refusal cuts one part in two: at most two reconciliations per refusal, plus the first.
    expect(opened).toBeLessThanOrEqual(2 * maxRefusals + 1)
  })
})
