import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js'
import { signEvent, type NostrEvent } from '../../src/events/event.js'
import { grantOwner, startTestHub, type TestHub } from '../helpers/hub.js'
import type { RawClient } from '../helpers/raw-client.js'

/** Stores `n` events of ~`size` bytes by the owner (setup: straight into the hub's store). */
function fill(t: TestHub, n: number, size: number): NostrEvent[] {
  const base = Math.floor(Date.now() / 1000) - n
  const events = Array.from({ length: n }, (_, i) =>
    t.sign({ created_at: base + i, tags: [['h', 'big']], content: `${i} ${'x'.repeat(size)}` }),
  )
  t.hub.store.insertBatch(events)
  return events
}

/** Stops reading from the hub: the socket's bytes stay in the kernel, then in the hub. */
function stopReading(c: RawClient): void {
  const socket = (c.ws as unknown as { _socket: import('node:net').Socket })._socket
  socket.pause()
}

// These move tens of megabytes through real sockets: slow on a busy two-core machine.
describe('a client that stops reading', { timeout: 60_000 }, () => {
  it('is closed when a REQ re-sent under one id would buffer its results, while others are served', async () => {
    const t = await startTestHub({
      limits: { maxUnreadBytes: 2 * 1024 * 1024, slowReaderMs: 1000 },
    })
    // 21 MB stored: well beyond what the kernel's socket buffers hold for a reader that stopped.
    fill(t, 350, 60_000)
    const greedy = await t.member()
    const other = await t.member()
    stopReading(greedy)
    const wide = Array.from({ length: 10 }, () => ({ '#h': ['big'], limit: 5000 }))
    for (let i = 0; i < 5; i++) greedy.send(['REQ', 'same', ...wide])
    // Another member's REQ is answered while the greedy one's REQs are pending.
    const { events, end } = await other.req('mine', { '#h': ['big'], limit: 3 })
    expect(end).toEqual(['EOSE', 'mine'])
    expect(events).toHaveLength(3)
    expect(
      await t.logged(/^closing slow reader .*: nothing read for 1000 ms while a REQ waits/),
    ).toBeTruthy()
    await expect.poll(() => t.hub.connections()).toBe(1)
    const e = t.sign({ content: 'still served' })
    other.send(['EVENT', e])
    expect(await other.ok(e.id)).toEqual(['OK', e.id, true, ''])
  })

  it('is closed once its unread live events pass the cap (member or stranger alike)', async () => {
    const t = await startTestHub({ limits: { maxUnreadBytes: 1024 * 1024 } })
    const reader = await t.member()
    expect((await reader.req('live', { kinds: [9], limit: 0 })).end[0]).toBe('EOSE')
    stopReading(reader)
    const writer = await t.member()
    // ~18 MB of live traffic for a subscriber that never reads.
    for (let i = 0; i < 300; i++) {
      const e = t.sign({ content: `${i} ${'y'.repeat(60_000)}` })
      writer.send(['EVENT', e])
      if ((i + 1) % 50 === 0) await writer.ok(e.id)
    }
    expect(await t.logged(/^closing slow reader .*: more than 1048576 bytes unread/)).toBeTruthy()
    await expect.poll(() => t.hub.connections()).toBe(1)
  })

  it('closes a stranger that floods frames and reads none of the answers', async () => {
    const t = await startTestHub({ limits: { maxUnreadBytes: 256 * 1024 } })
    const stranger = await t.connect()
    stopReading(stranger)
    // Each REQ is answered CLOSED auth-required (~110 bytes); 200,000 answers is ~22 MB.
    const frame = JSON.stringify(['REQ', 'x'.repeat(40), { kinds: [1] }])
    for (let i = 0; i < 200_000 && stranger.ws.readyState === stranger.ws.OPEN; i++) {
      stranger.send(frame)
      if (i % 5000 === 0) await new Promise((r) => setImmediate(r))
    }
    expect(await t.logged(/^closing slow reader .*: more than 262144 bytes unread/)).toBeTruthy()
  })
})

describe('REQ stored results sent in slices', { timeout: 60_000 }, () => {
  it('sends every stored match in order, each once, and misses no event accepted meanwhile', async () => {
    const t = await startTestHub({
      // Many small slices; the work budget (another test's subject) is off here.
      limits: { reqSliceBytes: 16_384, reqHighWaterBytes: 65_536, reqWorkMsPerSecond: 0 },
    })
    // 12 MB: more than the kernel buffers, so the REQ waits on its reader mid-way.
    const stored = fill(t, 600, 20_000)
    const c = await t.member()
    const writer = await t.member()
    stopReading(c)
    // Two overlapping filters: their union, newest first, each event once.
    c.send(['REQ', 'all', { '#h': ['big'], limit: 5000 }, { kinds: [9], limit: 400 }])
    const late = [
      t.sign({ created_at: stored[10]!.created_at, tags: [['h', 'big']], content: 'late, old' }),
      t.sign({ tags: [['h', 'big']], content: 'late, new' }),
    ]
    for (const e of late) writer.send(['EVENT', e])
    expect((await Promise.all(late.map((e) => writer.ok(e.id)))).every((f) => f[2])).toBe(true)
    ;(c.ws as unknown as { _socket: import('node:net').Socket })._socket.resume()
    await c.next((f) => f[0] === 'EOSE' && f[1] === 'all')
    for (const e of late) {
      if (!c.frames.some((f) => f[0] === 'EVENT' && (f[2] as NostrEvent).id === e.id)) {
        await c.next((f) => f[0] === 'EVENT' && (f[2] as NostrEvent).id === e.id)
        c.frames.push(['EVENT', 'all', e])
      }
    }
    const ids = c.frames.filter((f) => f[0] === 'EVENT').map((f) => (f[2] as NostrEvent).id)
    expect(new Set(ids).size).toBe(ids.length)
    const isLate = (id: string) => late.some((e) => e.id === id)
    expect(ids.filter((id) => !isLate(id))).toEqual([...stored].reverse().map((e) => e.id))
    expect(ids.filter(isLate).sort()).toEqual(late.map((e) => e.id).sort())
  })

  it('streams small and large events across pages and slices, in order, each once', async () => {
    // Small slices end mid-page, and the next reads again after the last row sent; large ones
    // use up whole pages.
    for (const reqSliceBytes of [4096, 256 * 1024]) {
      const t = await startTestHub({ limits: { reqSliceBytes, reqWorkMsPerSecond: 0 } })
      const base = Math.floor(Date.now() / 1000) - 1000
      // Mostly small events (read with their page), every ninth too large to be (read apart).
      const stored = Array.from({ length: 450 }, (_, i) =>
        t.sign({
          created_at: base + Math.floor(i / 3),
          tags: [['h', i % 2 === 0 ? 'even' : 'odd']],
          content: i % 9 === 0 ? 'y'.repeat(6000) : `small ${i}`,
        }),
      )
      t.hub.store.insertBatch(stored)
      const c = await t.member()
      c.send(['REQ', 'mix', { '#h': ['even'], limit: 5000 }, { '#h': ['odd'], limit: 180 }, {}])
      await c.next((f) => f[0] === 'EOSE' && f[1] === 'mix')
      const got = c.frames.filter((f) => f[0] === 'EVENT').map((f) => f[2] as NostrEvent)
      const newestFirst = [...stored].sort(
        (a, b) => b.created_at - a.created_at || (a.id < b.id ? -1 : 1),
      )
      // The filter {} alone (limit 500) reaches every event: the union is all 450, in order.
      expect(got.map((e) => e.id)).toEqual(newestFirst.map((e) => e.id))
      expect(got.filter((e) => e.content.length === 6000)).toHaveLength(50)
    }
  })

  it('makes a person’s REQs wait once their work budget is spent, while others are answered', async () => {
    const t = await startTestHub({
      // No idle lending: the greedy REQs must wait however long the other person takes to come.
      limits: {
        reqSliceBytes: 8192,
        reqWorkMsPerSecond: 1,
        reqWorkBurstMs: 1,
        reqWorkLendAfterQuietMs: 0,
      },
    })
    fill(t, 800, 300)
    const greedy = await t.member()
    const p = await grantOwner(t)
    const wide = Array.from({ length: 10 }, (_, i) => ({ '#h': ['big'], limit: 5000, since: i }))
    for (let i = 0; i < 20; i++) greedy.send(['REQ', 'same', ...wide])
    // Another person's REQ is answered while the greedy one's is still waiting for budget.
    const other = await p.client()
    const { end } = await other.req('mine', { '#h': ['big'], limit: 3 })
    expect(end).toEqual(['EOSE', 'mine'])
    expect(greedy.frames.some((f) => f[0] === 'EOSE')).toBe(false)
  })

  it('drops what a replaced REQ still had to send', async () => {
    const t = await startTestHub({ limits: { reqSliceBytes: 4096 } })
    fill(t, 300, 300)
    const c = await t.member()
    c.send(['REQ', 's', { '#h': ['big'], limit: 300 }])
    c.send(['REQ', 's', { '#h': ['big'], limit: 2 }])
    const eoses = [await c.next((f) => f[0] === 'EOSE'), await c.req('probe', { limit: 0 })]
    expect(eoses[0]).toEqual(['EOSE', 's'])
    // Only the second REQ's two results, plus whatever of the first went out in its first slice.
    const sent = c.frames.filter((f) => f[0] === 'EVENT' && f[1] === 's').length
    expect(sent).toBeLessThan(300)
    expect(c.frames.filter((f) => f[0] === 'EOSE' && f[1] === 's')).toHaveLength(0)
  })
})

describe('the pairing lane', () => {
  it('gives a connection one lane subscription: thousands of REQs cannot multiply relayed events', async () => {
    const t = await startTestHub()
    const pid = bytesToHex(randomBytes(16))
    const greedy = await t.connect()
    const filter = { kinds: [24140], '#d': [pid] }
    greedy.send(['REQ', 'p0', filter])
    expect(await greedy.next((f) => f[1] === 'p0')).toEqual(['EOSE', 'p0'])
    for (let i = 1; i <= 2000; i++) greedy.send(['REQ', `p${i}`, filter])
    const last = await greedy.next((f) => f[1] === 'p2000')
    expect(last).toEqual([
      'CLOSED',
      'p2000',
      'restricted: pairing: one lane subscription per connection',
    ])
    expect(greedy.frames.filter((f) => f[0] === 'EOSE')).toHaveLength(0)
    const sender = await t.connect()
    const events = Array.from({ length: 16 }, (_, i) =>
      signEvent(
        {
          kind: 24140,
          created_at: Math.floor(Date.now() / 1000),
          tags: [['d', pid]],
          content: `{"i":${i},"pad":"${'z'.repeat(3000)}"}`,
        },
        generateSecretKey(),
      ),
    )
    for (const e of events) sender.send(['EVENT', e])
    expect((await Promise.all(events.map((e) => sender.ok(e.id)))).every((f) => f[2])).toBe(true)
    for (const e of events)
      await greedy.next((f) => f[0] === 'EVENT' && (f[2] as NostrEvent).id === e.id)
    // Each event reached the greedy party once, on its one subscription.
    expect(greedy.frames.filter((f) => f[0] === 'EVENT')).toHaveLength(0)
  })

  it('forgets closed lane connections at once', async () => {
    const t = await startTestHub()
    const parties = []
    for (let i = 0; i < 20; i++) {
      const c = await t.connect()
      c.send(['REQ', 'pair', { kinds: [24140], '#d': [bytesToHex(randomBytes(16))] }])
      await c.next((f) => f[0] === 'EOSE')
      parties.push(c)
    }
    expect(t.hub.stats()).toMatchObject({ laneConnections: 20, laneRooms: 20 })
    for (const c of parties) c.close()
    await expect.poll(() => t.hub.stats().laneConnections).toBe(0)
    // Rooms one party waited in alone, then left, are freed too.
    expect(t.hub.stats().laneRooms).toBe(0)
  })
})
