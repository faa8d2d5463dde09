import { statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { signEvent, type NostrEvent } from '../../src/events/event.js'
import { isKithError } from '../../src/errors.js'
import { GroupCommit } from '../../src/hub/group-commit.js'
import { EventStore, type StoreOutcome } from '../../src/store/event-store.js'
import { hubMigrations } from '../../src/store/hub-schema.js'
import { tempDir } from '../helpers/tmp.js'

const sk = generateSecretKey()
const ev = (content: string): NostrEvent =>
  signEvent({ kind: 9, created_at: 100, tags: [], content }, sk)

function apartStore(): { store: EventStore; path: string } {
  const path = join(tempDir(), 'hub.db')
  return { store: new EventStore(path, { migrations: hubMigrations, syncApart: true }), path }
}

describe('commits made durable apart from sqlite (WalSync)', () => {
  it('lets sqlite commit without fsync only when the store syncs the WAL itself', () => {
    const { store, path } = apartStore()
    expect(store.db.pragma('synchronous', { simple: true })).toBe(1)
    expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(4000)
    // sqlite gives the -wal file the database's mode: 0600, like the database.
    expect(statSync(`${path}-wal`).mode & 0o777).toBe(0o600)
    store.close()
    const plain = new EventStore(join(tempDir(), 'node.db'))
    expect(plain.db.pragma('synchronous', { simple: true })).toBe(2)
    let called = false
    plain.afterCommit(() => (called = true))
    expect(called).toBe(true)
    expect(plain.walSyncs).toBe(0)
    plain.close()
  })

  it('answers each commit after an fsync that began after it, in order, sharing fsyncs', async () => {
    const { store, path } = apartStore()
    const order: string[] = []
    const synced = (name: string) =>
      new Promise<void>((resolve, reject) =>
        store.afterCommit((err) => {
          if (err !== undefined) reject(err)
          order.push(name)
          resolve()
        }),
      )
    const waits: Promise<void>[] = []
    for (const name of ['a', 'b', 'c', 'd']) {
      store.insertBatch([ev(name)])
      waits.push(synced(name))
    }
    await Promise.all(waits)
    expect(order).toEqual(['a', 'b', 'c', 'd'])
    // The first fsync starts at once; b, c and d committed while it ran and share the next.
    expect(store.walSyncs).toBe(2)
    await store.drained()
    store.close()
    expect(new EventStore(path, { migrations: hubMigrations }).count()).toBe(4)
  })

  it('says so when asked after the store closed', async () => {
    const { store } = apartStore()
    store.close()
    const err = await new Promise<Error | undefined>((resolve) => store.afterCommit(resolve))
    expect(isKithError(err) && err.code).toBe('io')
  })
})

describe('GroupCommit', () => {
  it('acknowledges nothing until the commit is durable, and an fsync failure is nobody’s OK', async () => {
    const { store } = apartStore()
    let release: ((err?: Error) => void) | undefined
    const commit = new GroupCommit(store, {
      maxBatch: 512,
      maxDelayMs: 4,
      moreComing: () => false,
      durable: (done) => (release = done),
    })
    const outcomes: (StoreOutcome | Error)[] = []
    const a = ev('held a')
    const b = ev('held b')
    commit.submit(a, JSON.stringify(a), (o) => outcomes.push(o))
    commit.submit(b, JSON.stringify(b), (o) => outcomes.push(o))
    commit.flush()
    // Committed (readable) but not yet durable: no sender has been told.
    expect(store.getEvent(a.id)?.id).toBe(a.id)
    expect(outcomes).toEqual([])
    release!()
    expect(outcomes).toEqual(['stored', 'stored'])

    const c = ev('held c')
    const failed: (StoreOutcome | Error)[] = []
    commit.submit(c, JSON.stringify(c), (o) => failed.push(o))
    commit.flush()
    expect(failed).toEqual([])
    release!(new Error('fsync: EIO'))
    expect(failed.map((o) => (o instanceof Error ? o.message : o))).toEqual(['fsync: EIO'])
    await store.drained()
    store.close()
  })
})
