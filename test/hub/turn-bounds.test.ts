import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { signEvent } from '../../src/events/event.js'
import { GroupCommit } from '../../src/hub/group-commit.js'
import { defaultHubLimits } from '../../src/hub/limits.js'
import { NegReconciliations, type NegPeer } from '../../src/hub/negentropy.js'
import { ReqScheduler, WorkBudget, type SliceOutcome } from '../../src/hub/req-scheduler.js'
import { TurnQueue } from '../../src/hub/turn-queue.js'
import { EventStore } from '../../src/store/event-store.js'
import { tempDir } from '../helpers/tmp.js'

// Issue 30: what another person's frame waits behind is one turn's bounded work, not every
// waiting connection's slice (REQs) or a slice per NEG-OPEN frame read (NIP-77).

const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

/** Holds the main thread for `ms`, as a slice over many rows does. */
function busy(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until);
}

describe('the REQ scheduler', () => {
  it('runs slices for one turn’s time, then yields to I/O before the next waiting connection', async () => {
    const scheduler = new ReqScheduler<{ runSlice(): SliceOutcome }>(2)
    const ran: string[] = []
    const conn = (name: string) => ({
      runSlice(): SliceOutcome {
        ran.push(name)
        busy(3)
        return 'idle'
      },
    })
    for (const name of ['a', 'b', 'c']) scheduler.add(conn(name))
    // Each slice outlasts the turn's 2 ms: one slice a turn. (Before, all three ran in one.)
    await turn()
    expect(ran).toEqual(['a'])
    await turn()
    expect(ran).toEqual(['a', 'b'])
    await turn()
    expect(ran).toEqual(['a', 'b', 'c'])
  })

  it('gives every waiting connection a slice in one turn when slices are short', async () => {
    const scheduler = new ReqScheduler<{ runSlice(): SliceOutcome }>(2)
    const ran: string[] = []
    let left = 2
    scheduler.add({
      runSlice: () => {
        ran.push('big')
        return --left > 0 ? 'more' : 'idle'
      },
    })
    scheduler.add({ runSlice: () => (ran.push('small'), 'idle') })
    await turn()
    // Round robin: the big REQ's second slice waits behind the small one's first.
    expect(ran).toEqual(['big', 'small'])
    await turn()
    expect(ran).toEqual(['big', 'small', 'big'])
  })
})

describe('what the background turns go after', () => {
  it('a REQ that just arrived gets its slice before another connection’s stream goes on', async () => {
    const scheduler = new ReqScheduler<{ runSlice(): SliceOutcome }>(2)
    const ran: string[] = []
    scheduler.add({
      runSlice: () => {
        ran.push('big')
        busy(3)
        return 'more'
      },
    })
    await turn()
    expect(ran).toEqual(['big'])
    scheduler.add({ runSlice: () => (ran.push('small'), 'idle') })
    await turn()
    // Before, the stream re-added at the back was still ahead of the REQ that arrived after it.
    expect(ran.slice(0, 2)).toEqual(['big', 'small'])
  })

  it('an EVENT read in the last poll is committed before the turn’s slices run', async () => {
    const store = new EventStore(join(tempDir(), 'events.db'))
    const commit = new GroupCommit(store, { maxBatch: 512, maxDelayMs: 4, moreComing: () => false })
    const scheduler = new ReqScheduler<{ runSlice(): SliceOutcome }>(2, () => commit.flushIfDue())
    const event = signEvent(
      { kind: 9, created_at: 1000, tags: [], content: 'x' },
      generateSecretKey(),
    )
    let storedAtSlice: boolean | undefined
    // The REQ's turn was queued first (a stream going on), the EVENT read after it.
    scheduler.add({
      runSlice: () => {
        storedAtSlice = store.getEvent(event.id) !== undefined
        return 'idle'
      },
    })
    const ok = new Promise((resolve) => commit.submit(event, JSON.stringify(event), resolve))
    await turn()
    // Before, the commit's own check ran after the slices: every OK waited out a turn of them.
    expect(storedAtSlice).toBe(true)
    await ok
  })
})

describe('REQs answered in the turn their frame is read', () => {
  it('share one allowance a turn: a burst of REQ frames read together waits its turn', async () => {
    const scheduler = new ReqScheduler<{ runSlice(): SliceOutcome }>(2)
    expect(scheduler.inlineLeft()).toBe(2)
    scheduler.spentInline(1.5)
    expect(scheduler.inlineLeft()).toBe(0.5)
    scheduler.spentInline(1)
    expect(scheduler.inlineLeft()).toBeLessThanOrEqual(0)
    // The next turn has its own.
    await turn()
    expect(scheduler.inlineLeft()).toBe(2)
  })
})

describe('NIP-77 reconciliations', () => {
  function setUp() {
    const store = new EventStore(join(tempDir(), 'events.db'))
    const sk = generateSecretKey()
    store.insertBatch(
      Array.from({ length: 120 }, (_, i) =>
        signEvent({ kind: 9, created_at: 1000 + (i % 50), tags: [], content: `m${i}` }, sk),
      ),
    )
    const sent: unknown[][] = []
    let reads = 0
    const peer: NegPeer = {
      send: (frame) => sent.push(frame),
      hidden: () => {
        reads++
        return []
      },
      payer: () => 'someone',
    }
    const neg = new NegReconciliations(store, { ...defaultHubLimits, negSliceItems: 50 }, peer, {
      work: new WorkBudget(0, 0),
      open: new Map(),
      maxOpenPerPerson: 8,
      turns: new TurnQueue(),
    })
    return { store, neg, sent, reads: () => reads }
  }

  it('reads nothing in the turn a NEG-OPEN frame arrives: the set is read on later turns', async () => {
    const { store, neg, sent, reads } = setUp()
    const empty = '61' // NIP-77 v1 with no ranges: the client holds nothing
    neg.open('a', {}, empty)
    neg.open('b', {}, empty)
    // Before, each NEG-OPEN read a slice of the store right away, in the frame's turn: a client
    // sending them faster than they were read held every other connection's frames behind them.
    expect(reads()).toBe(0)
    // Re-opened before its turn came: the first 'a' is dropped without a row read for it.
    neg.open('a', {}, empty)
    expect(reads()).toBe(0)
    for (let i = 0; i < 20 && sent.length < 2; i++) await turn()
    expect(sent.map((f) => [f[0], f[1]]).sort()).toEqual([
      ['NEG-MSG', 'a'],
      ['NEG-MSG', 'b'],
    ])
    // Each set was read once: pages of 50 rows (the last short), every page asking what the member may not see.
    expect(reads()).toBe(2 * 3)
    neg.closeAll()
    store.close()
  })

  it('reconciliations whose budgets refill together still read one slice a turn', async () => {
    const store = new EventStore(join(tempDir(), 'events.db'))
    const sk = generateSecretKey()
    store.insertBatch(
      Array.from({ length: 20 }, (_, i) =>
        signEvent({ kind: 9, created_at: 1000 + i, tags: [], content: `m${i}` }, sk),
      ),
    )
    // Eight people, each out of work budget by the same amount: their waits end in the same
    // timers phase. Before, each slice ran in that phase, all eight back to back before any
    // other connection's frame was read.
    const budget = {
      work: new WorkBudget(1000, 1),
      open: new Map<string, number>(),
      maxOpenPerPerson: 8,
      turns: new TurnQueue(),
    }
    let loopTurn = 0
    let probing = true
    const probe = () => {
      loopTurn++
      if (probing) setImmediate(probe)
    }
    probe()
    const firstReadAt = new Map<string, number>()
    const people = Array.from({ length: 8 }, (_, i) => `person${i}`)
    const sessions = people.map((who) => {
      const peer: NegPeer = {
        send: () => {},
        hidden: () => {
          if (!firstReadAt.has(who)) firstReadAt.set(who, loopTurn)
          return []
        },
        payer: () => who,
      }
      return new NegReconciliations(store, defaultHubLimits, peer, budget)
    })
    const now = Date.now()
    for (const who of people) budget.work.charge(who, 3, now)
    sessions.forEach((neg) => neg.open('a', {}, '61'))
    while (firstReadAt.size < people.length) await turn()
    probing = false
    // Each person's first slice in a loop turn of its own.
    expect(new Set(firstReadAt.values()).size).toBe(people.length)
    for (const neg of sessions) neg.closeAll()
    store.close()
  })
})
