import { fsync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { signEvent, type NostrEvent } from '../../src/events/event.js'
import { openDatabase, type Db } from '../../src/store/db.js'
import { EventStore } from '../../src/store/event-store.js'
import { hubMigrations } from '../../src/store/hub-schema.js'
import { checkpointFrames, WalCheckpointer } from '../../src/store/wal-checkpoint.js'
import { WalSync } from '../../src/store/wal-sync.js'
import { tempDir } from '../helpers/tmp.js'

const sk = generateSecretKey()
const ev = (content: string): NostrEvent =>
  signEvent({ kind: 9, created_at: 100, tags: [], content }, sk)

/** Frames in the WAL, and how many of them sqlite has copied to the database file. */
function wal(db: Db): { log: number; checkpointed: number } {
  return (db.pragma('wal_checkpoint(NOOP)') as { log: number; checkpointed: number }[])[0]!
}

/** An fsync of the database file held until the test lets it run (or fail). */
function heldFsync() {
  const held: { fd: number; done: (err: NodeJS.ErrnoException | null) => void }[] = []
  return {
    held,
    fsync: (fd: number, done: (err: NodeJS.ErrnoException | null) => void) => {
      held.push({ fd, done })
    },
    run: () => {
      const h = held.shift()!
      return new Promise<void>((resolve) =>
        fsync(h.fd, (err) => {
          h.done(err)
          resolve()
        }),
      )
    },
  }
}

function setup(frames: number) {
  const path = join(tempDir(), 'hub.db')
  const db = openDatabase(path, hubMigrations, { syncApart: true })
  db.exec('CREATE TABLE filler (x TEXT)')
  const insert = db.prepare('INSERT INTO filler (x) VALUES (?)')
  // Each row fills most of a page: a commit of one row adds a couple of frames.
  const commit = () => insert.run('x'.repeat(3000))
  const walSync = new WalSync(`${path}-wal`)
  const gate = heldFsync()
  const checkpointer = new WalCheckpointer(db, path, walSync, { frames, fsync: gate.fsync })
  const synced = () => new Promise<void>((resolve) => walSync.afterCommit(() => resolve()))
  return { path, db, commit, walSync, gate, checkpointer, synced }
}

/** Commits once more and says whether sqlite started the WAL over (wrote from its start). */
function restartsAt(db: Db, commit: () => void): boolean {
  const before = wal(db).log
  commit()
  return wal(db).log < before
}

describe('checkpoints apart from sqlite (WalCheckpointer)', () => {
  it('copies only synced frames, and keeps the WAL until the database file is synced', async () => {
    const { db, commit, walSync, gate, checkpointer, synced } = setup(20)
    while (wal(db).log < 20) commit()
    checkpointer.committed()
    const snapshot = wal(db).log
    // Committed after the checkpoint began: possibly not yet on disk, so not copied.
    commit()
    await synced()
    expect(checkpointer.checkpoints).toBe(1)
    expect(wal(db).checkpointed).toBe(snapshot)
    expect(gate.held).toHaveLength(1)

    // While the database file's fsync is held, commits append: nothing is written over the
    // frames just copied.
    const before = wal(db).log
    for (let i = 0; i < 5; i++) commit()
    expect(wal(db).log).toBeGreaterThan(before)
    expect(checkpointer.committed()).toBeUndefined()
    expect(gate.held).toHaveLength(1)

    await gate.run()
    await checkpointer.drained()
    // What was committed during the fsync was copied by sqlite's own synced checkpoint, so the
    // WAL is wholly copied and the next commit starts it over: it cannot grow without end.
    expect(wal(db).checkpointed).toBe(wal(db).log)
    expect(restartsAt(db, commit)).toBe(true)
    await walSync.drained()
    checkpointer.close()
    walSync.close()
    db.close()
  })

  it('lets sqlite restart the WAL only after the database file is synced', async () => {
    const { db, commit, walSync, gate, checkpointer, synced } = setup(20)
    while (wal(db).log < 20) commit()
    checkpointer.committed()
    await synced()
    // Every frame copied; sqlite would start the WAL over at the next commit, but the reader
    // holds it until the database file is synced.
    const copied = wal(db)
    expect(copied.checkpointed).toBe(copied.log)
    expect(restartsAt(db, commit)).toBe(false)

    await gate.run()
    await checkpointer.drained()
    expect(restartsAt(db, commit)).toBe(true)
    await walSync.drained()
    checkpointer.close()
    walSync.close()
    db.close()
  })

  it('copies a large tail apart in a further round before sqlite copies the rest', async () => {
    const { db, commit, walSync, gate, checkpointer, synced } = setup(20)
    while (wal(db).log < 20) commit()
    checkpointer.committed()
    await synced()
    // Much committed while the database file's fsync runs: more than sqlite should copy with
    // its fsyncs on the main thread.
    for (let i = 0; i < 300; i++) commit()
    const tail = wal(db)
    await gate.run()
    // A second round: copy, and another fsync held apart.
    await synced()
    expect(checkpointer.checkpoints).toBe(2)
    expect(wal(db).checkpointed).toBeGreaterThanOrEqual(tail.log)
    expect(gate.held).toHaveLength(1)
    expect(restartsAt(db, commit)).toBe(false)
    await gate.run()
    await checkpointer.drained()
    expect(restartsAt(db, commit)).toBe(true)
    await walSync.drained()
    checkpointer.close()
    walSync.close()
    db.close()
  })

  it('keeps the WAL after a failed fsync of the database file, and tries again', async () => {
    const { db, commit, walSync, gate, checkpointer, synced } = setup(20)
    while (wal(db).log < 20) commit()
    checkpointer.committed()
    await synced()
    gate.held.shift()!.done(Object.assign(new Error('EIO: i/o error'), { code: 'EIO' }))
    expect(checkpointer.lastError?.code).toBe('io')
    expect(checkpointer.lastError?.message).toContain('EIO')
    // Failed: the copies may not be on disk, so the WAL is not written over.
    expect(restartsAt(db, commit)).toBe(false)
    // The next commit tries the fsync again.
    checkpointer.committed()
    expect(gate.held).toHaveLength(1)
    await gate.run()
    expect(checkpointer.lastError).toBeUndefined()
    expect(restartsAt(db, commit)).toBe(true)
    await walSync.drained()
    checkpointer.close()
    walSync.close()
    db.close()
  })
})

describe('EventStore with syncApart', () => {
  it('checkpoints by itself, and a reopened store has every event', async () => {
    expect(checkpointFrames).toBeGreaterThan(0)
    const path = join(tempDir(), 'hub.db')
    const store = new EventStore(path, { migrations: hubMigrations, syncApart: true })
    let stored = 0
    while (store.walCheckpoints === 0) {
      // ~30 KB each: a few frames an event, so few events reach a checkpoint.
      const batch = Array.from({ length: 50 }, (_, i) => ev(`${stored + i} ${'x'.repeat(30000)}`))
      store.insertBatch(batch)
      stored += batch.length
      await new Promise<void>((resolve) => store.afterCommit(() => resolve()))
      // Bounded: a checkpointer that never starts fails here rather than looping on.
      expect(stored).toBeLessThan(checkpointFrames * 4)
    }
    await store.drained()
    store.close()
    const again = new EventStore(path, { migrations: hubMigrations })
    expect(again.count()).toBe(stored)
    again.close()
  })
})
