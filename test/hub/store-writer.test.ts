import { availableParallelism } from 'node:os'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { signEvent, type NostrEvent } from '../../src/events/event.js'
import { isKithError } from '../../src/errors.js'
import { GroupCommit } from '../../src/hub/group-commit.js'
import { startHub } from '../../src/hub/server.js'
import { BatchWriter } from '../../src/store/batch-writer.js'
import { EventStore, type StoreOutcome } from '../../src/store/event-store.js'
import { hubMigrations, usageUncountedKinds } from '../../src/store/hub-schema.js'
import { startTestHub } from '../helpers/hub.js'
import { tempDir } from '../helpers/tmp.js'

const sk = generateSecretKey()
const ev = (content: string, kind = 9): NostrEvent =>
  signEvent({ kind, created_at: 100, tags: [['t', content]], content }, sk)

function hubStore(path: string): EventStore {
  return new EventStore(path, {
    syncApart: true,
    migrations: hubMigrations,
    usage: { exempt: usageUncountedKinds },
  })
}

/** Group commit as the hub has it, its first batch waking `writer`. */
function committingOn(store: EventStore, writer: BatchWriter): GroupCommit {
  return new GroupCommit(store, {
    maxBatch: 512,
    maxDelayMs: 4,
    moreComing: () => false,
    writer,
    wakeAt: 1,
  })
}

function submit(commit: GroupCommit, e: NostrEvent): Promise<StoreOutcome> {
  return new Promise((resolve, reject) =>
    commit.submit(e, JSON.stringify(e), (o) => (o instanceof Error ? reject(o) : resolve(o))),
  )
}

describe("the store's writer thread", () => {
  it('commits batches beside the main thread with the outcomes and usage of the main thread', async () => {
    const path = join(tempDir(), 'hub.db')
    const store = hubStore(path)
    const lines: string[] = []
    const writer = new BatchWriter({ path, synchronous: 'full', log: (l) => lines.push(l) })
    const commit = committingOn(store, writer)
    // The first batch is written here and wakes the thread.
    const first = ev('first')
    expect(await submit(commit, first)).toBe('stored')
    await vi.waitFor(() => expect(writer.ready).toBe(true))
    const many = Array.from({ length: 50 }, (_, i) => ev(`e${i}`))
    const outcomes = await Promise.all([...many, first, many[0]!].map((e) => submit(commit, e)))
    expect(outcomes).toEqual([...many.map(() => 'stored'), 'duplicate', 'duplicate'])
    expect(writer.batches).toBeGreaterThan(0)
    // The main thread's connection reads what the thread committed, and counts its usage.
    expect(store.count()).toBe(51)
    expect(store.getEvent(many[49]!.id)?.content).toBe('e49')
    const usage = store.usageOf(first.pubkey)
    expect(usage.events).toBe(51)
    await commit.close()
    expect(writer.running).toBe(false)
    await store.drained()
    store.close()
    // The main connection closed last: sqlite checkpointed and removed the -wal (a clean stop).
    expect(existsSync(`${path}-wal`)).toBe(false)
    const again = hubStore(path)
    expect(again.usageOf(first.pubkey)).toEqual(usage)
    expect(again.count()).toBe(51)
    again.close()
    expect(lines).toEqual([])
  })

  it('retires when idle and starts again for the next busy spell', async () => {
    const path = join(tempDir(), 'hub.db')
    const store = hubStore(path)
    const lines: string[] = []
    const writer = new BatchWriter({
      path,
      synchronous: 'full',
      idleMs: 300,
      log: (l) => lines.push(l),
    })
    for (const round of [1, 2, 3]) {
      // Woken again should a busy machine let it retire before this looks.
      await vi.waitFor(() => {
        writer.wake()
        expect(writer.ready).toBe(true)
      })
      const e = ev(`round ${round}`)
      expect((await writer.write([JSON.stringify(e)])).outcomes).toEqual(['stored'])
      // Idle for idleMs: the thread closes its connection and ends.
      await vi.waitFor(() => expect(writer.running).toBe(false))
    }
    expect(writer.batches).toBe(3)
    expect(store.count()).toBe(3)
    // A retirement is not a failure to start: nothing said, nothing disabled.
    expect(lines).toEqual([])
    await writer.close()
    store.close()
  })

  it('rolls back a batch that fails there, tells its senders, and goes on with the next', async () => {
    const path = join(tempDir(), 'hub.db')
    const store = hubStore(path)
    const writer = new BatchWriter({ path, synchronous: 'full' })
    writer.wake()
    await vi.waitFor(() => expect(writer.ready).toBe(true))
    const good = ev('good')
    const err = await writer.write([JSON.stringify(good), '{not json']).catch((e: unknown) => e)
    expect(isKithError(err, 'io')).toBe(true)
    expect(String((err as Error).message)).toMatch(/^store write failed: /)
    // Nothing of the failed batch was stored, the good event included.
    expect(store.count()).toBe(0)
    expect((await writer.write([JSON.stringify(good)])).outcomes).toEqual(['stored'])
    expect(store.count()).toBe(1)
    await writer.close()
    await expect(writer.write([JSON.stringify(good)])).rejects.toMatchObject({ code: 'io' })
    store.close()
  })

  it('commits large events in batches of at most maxBatchChars of JSON, in order', async () => {
    const path = join(tempDir(), 'hub.db')
    const store = hubStore(path)
    const batches: number[] = []
    let pending = 0
    const commit = new GroupCommit(store, {
      maxBatch: 512,
      maxDelayMs: 4,
      moreComing: () => false,
      maxBatchChars: 2 * JSON.stringify(ev('x'.repeat(1000))).length,
      durable: (done) => {
        batches.push(store.count() - pending)
        pending = store.count()
        done()
      },
    })
    const big = Array.from({ length: 5 }, (_, i) => ev(`${i}`.repeat(1000)))
    expect(await Promise.all(big.map((e) => submit(commit, e)))).toEqual(big.map(() => 'stored'))
    // Two events' JSON a batch: 2, 2, 1.
    expect(batches).toEqual([2, 2, 1])
    await commit.close()
    store.close()
  })

  it('leaves the hub writing on its main thread when the thread cannot open the store', async () => {
    const path = join(tempDir(), 'hub.db')
    const store = hubStore(path)
    const lines: string[] = []
    // A path the thread cannot open: its directory does not exist.
    const writer = new BatchWriter({
      path: join(tempDir(), 'missing', 'hub.db'),
      synchronous: 'full',
      log: (l) => lines.push(l),
    })
    const commit = committingOn(store, writer)
    expect(await submit(commit, ev('a'))).toBe('stored')
    await vi.waitFor(() => expect(lines.join('\n')).toMatch(/writing on the main thread/))
    expect(await submit(commit, ev('b'))).toBe('stored')
    expect(writer.batches).toBe(0)
    expect(store.count()).toBe(2)
    await commit.close()
    store.close()
  })

  // On one core the hub runs no writer thread (server.ts).
  it.skipIf(availableParallelism() < 2)(
    'serves a busy hub from it: every EVENT answered, every event read back, a clean stop',
    async () => {
      const t = await startTestHub({ writerWakeAt: 1 })
      const c = await t.member()
      // The first batch wakes the thread; events go on being written here until it is ready.
      let before = 0
      await vi.waitFor(
        async () => {
          const e = t.sign({ content: `before ${before++}` })
          const ok = c.ok(e.id)
          c.send(['EVENT', e])
          expect((await ok)[2]).toBe(true)
          expect(t.hub.stats().writerBatches).toBeGreaterThan(0)
        },
        { timeout: 10_000, interval: 5 },
      )
      const events = Array.from({ length: 300 }, (_, i) => t.sign({ content: `m${i}` }))
      const oks = events.map((e) => c.ok(e.id))
      for (const e of events) c.send(['EVENT', e])
      const answers = await Promise.all(oks)
      expect(answers.every((a) => a[2] === true)).toBe(true)
      const { events: got } = await c.req('all', { kinds: [9], limit: 1000 })
      expect(got).toHaveLength(300 + before)
      // Sent again: the thread's connection says duplicate.
      const dup = c.ok(events[7]!.id)
      c.send(['EVENT', events[7]!])
      expect((await dup)[3]).toMatch(/^duplicate:/)
      await t.hub.close()
      expect(existsSync(join(t.dir, 'hub.db-wal'))).toBe(false)
      // The next start finds a clean stop.
      const lines: string[] = []
      const again = await startHub({
        port: 0,
        dbPath: join(t.dir, 'hub.db'),
        founder: t.owner,
        verifyWorkers: 0,
        log: (l) => lines.push(l),
      })
      await again.checked
      expect(lines.join('\n')).toMatch(/was closed cleanly/)
      await again.close()
    },
  )
})
