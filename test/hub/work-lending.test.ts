import { describe, expect, it } from 'vitest'
import { strangerName, WorkBudget } from '../../src/hub/req-scheduler.js'
import { grantOwner, startTestHub, type TestHub } from '../helpers/hub.js'

const now = () => Math.floor(Date.now() / 1000)

describe('the work budget lends idle time', () => {
  it('makes a person past the budget wait while anyone else used the hub lately', () => {
    // 10 ms a second, 10 ms in hand at most, lent after 1,000 ms with no one else.
    const b = new WorkBudget(10, 10, 1000)
    b.seen('bob', 0)
    b.charge('alice', 50, 0)
    // Bob's frame 500 ms ago: she waits, until she would be lent (500 ms), not for her bucket
    // to refill (-35 ms in hand: 3.6 s at 10 ms a second).
    expect(b.wait('alice', 500)).toBe(500)
    // 1,000 ms after him: lent.
    expect(b.wait('alice', 1000)).toBe(0)
    // Bob came back at 1,200: her wait starts over, and her bucket still holds her debt.
    b.seen('bob', 1200)
    expect(b.wait('alice', 1300)).toBe(900)
    expect(b.lends('alice', 1300)).toBe(false)
    // Alone on a hub that never saw anyone else, she is lent at once.
    const alone = new WorkBudget(10, 10, 1000)
    alone.charge('alice', 50, 0)
    expect(alone.wait('alice', 1)).toBe(0)
  })

  it('counts every other name, a stranger’s frame included, and never the person themself', () => {
    for (const other of ['bob', strangerName]) {
      const b = new WorkBudget(100, 10, 1000)
      b.charge('alice', 50, 0)
      b.seen(other, 5000)
      for (let t = 5001; t < 5100; t += 10) b.seen('alice', t)
      expect(b.lends('alice', 5999)).toBe(false)
      expect(b.lends('alice', 6000)).toBe(true)
      // Bob is the one who waits while alice works: she is the other for him.
      expect(b.lends(other, 6000)).toBe(false)
    }
  })

  it('remembers the latest other person behind a run of one person’s frames', () => {
    const b = new WorkBudget(100, 10, 1000)
    b.seen('carol', 0)
    b.seen('bob', 100)
    b.seen('alice', 200)
    b.seen('alice', 300)
    // For alice the other is bob (100), not carol (0); for bob it is alice (300).
    expect(b.lends('alice', 1099)).toBe(false)
    expect(b.lends('alice', 1100)).toBe(true)
    expect(b.lends('bob', 1299)).toBe(false)
    expect(b.lends('bob', 1300)).toBe(true)
  })

  it('does not charge lent time past what was in hand: no debt when others come back', () => {
    const b = new WorkBudget(100, 10, 10_000)
    // Alone: 5 s of work lent, charged only the 10 ms she had.
    for (let t = 0; t < 5000; t += 10) b.charge('alice', 10, t)
    b.seen('bob', 5000)
    // Her bucket was left empty, not 5 s in debt: 10 ms later it holds 1 ms, and she goes.
    expect(b.wait('alice', 5000)).toBe(0)
    // A debt made while others are there is kept: 300 ms is 3 s at 100 ms a second.
    b.charge('alice', 300, 5000)
    expect(b.wait('alice', 5001)).toBe(2999)
  })

  it('never lends when lending is off', () => {
    const b = new WorkBudget(100, 10, 0)
    b.charge('alice', 50, 0)
    expect(b.lends('alice', 1e9)).toBe(false)
    // Her bucket's refill alone: -39.9 ms in hand at 1 ms, 0.409 s at 100 ms a second.
    expect(b.wait('alice', 1)).toBe(409)
  })
})

/** Stores `n` events by the founder straight into the hub's store (setup). */
function fill(t: TestHub, n: number): void {
  const base = now() - n
  t.hub.store.insertBatch(
    Array.from({ length: n }, (_, i) =>
      t.sign({ created_at: base + i, tags: [['h', 'big']], content: `${i} ${'x'.repeat(1200)}` }),
    ),
  )
}

describe('a hub lends a lone member idle time past the work budget', { timeout: 60_000 }, () => {
  it('streams a member’s large REQ at once while no one else uses the hub, and stops when someone does', async () => {
    // 0.1 ms of work a second, and slices of 16 KiB: the 480 KB of events below take 30 slices and
    // far more than 1 ms, so without lending each REQ would take many seconds.
    const t = await startTestHub({
      limits: {
        eventsPerSecond: 0,
        reqSliceBytes: 16_384,
        reqWorkMsPerSecond: 0.1,
        reqWorkBurstMs: 1,
        reqWorkLendAfterQuietMs: 100,
      },
    })
    const founder = await t.member()
    const { sk: bobSk, client } = await grantOwner(t)
    fill(t, 400)
    const bob = await client()

    // Bob is quiet: the founder's REQ is lent the idle time and ends.
    founder.send(['REQ', 'alone', { '#h': ['big'], limit: 5000 }])
    expect(await founder.next((f) => f[1] === 'alone' && f[0] !== 'EVENT', 30_000)).toEqual([
      'EOSE',
      'alone',
    ])
    expect(founder.frames.filter((f) => f[0] === 'EVENT' && f[1] === 'alone')).toHaveLength(400)

    // Bob posts, one EVENT after each OK, from before the founder's second REQ to after it.
    const post = async (i: number) => {
      const e = t.sign({ kind: 9, content: `bob ${i}` }, bobSk)
      bob.send(['EVENT', e])
      expect((await bob.ok(e.id))[2]).toBe(true)
    }
    await post(0)
    founder.send(['REQ', 'crowded', { '#h': ['big'], limit: 5000 }])
    for (let i = 1; i <= 100; i++) await post(i)
    // Back on its budget (1 ms a second, nothing in hand): not done after Bob's 100 round trips.
    expect(founder.frames.some((f) => f[0] === 'EOSE' && f[1] === 'crowded')).toBe(false)
    // Once Bob is quiet again, it is lent the time and ends; nothing was refused.
    const end = await founder.next((f) => f[0] === 'EOSE' && f[1] === 'crowded', 30_000)
    expect(end).toEqual(['EOSE', 'crowded'])
    expect(founder.frames.filter((f) => f[0] === 'EVENT' && f[1] === 'crowded')).toHaveLength(400)
  })

  it('publishes the quiet time it lends after in NIP-11', async () => {
    const t = await startTestHub({ limits: { reqWorkLendAfterQuietMs: 750 } })
    const res = await fetch(t.url.replace('ws', 'http'), {
      headers: { accept: 'application/nostr+json' },
    })
    const doc = (await res.json()) as { kith: Record<string, unknown> }
    expect(doc.kith.req_work_lend_after_quiet_ms).toBe(750)
  })
})
