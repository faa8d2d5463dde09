import { closeSync, openSync, statSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { KithError } from '../../src/errors.js'
import { publicKeyOf, signEvent } from '../../src/events/event.js'
import { startHub } from '../../src/hub/server.js'
import { EventStore } from '../../src/store/event-store.js'
import { runKith } from '../helpers/cli.js'
import { startTestHub } from '../helpers/hub.js'
import { tempDir } from '../helpers/tmp.js'

const ownerSk = generateSecretKey()
const owner = publicKeyOf(ownerSk)

/** A closed hub.db holding 300 events (its WAL folded in on close). */
function filledDb(): string {
  const path = join(tempDir(), 'hub.db')
  const store = new EventStore(path)
  const events = Array.from({ length: 300 }, (_, i) =>
    signEvent(
      {
        kind: 9,
        created_at: 1_700_000_000 + i,
        tags: [['h', 'ops']],
        content: `m${i} ${'x'.repeat(200)}`,
      },
      ownerSk,
    ),
  )
  store.insertBatch(events)
  store.close()
  return path
}

/** Overwrites `length` bytes at `offset` with garbage, as a bad disk sector would. */
function damage(path: string, offset: number, length: number): void {
  const fd = openSync(path, 'r+')
  writeSync(fd, Buffer.alloc(length, 0xa5), 0, length, offset)
  closeSync(fd)
}

/** What starting a hub on `path` throws. */
async function refusal(path: string): Promise<KithError> {
  try {
    const hub = await startHub({ port: 0, dbPath: path, founder: owner, verifyWorkers: 0 })
    await hub.close()
  } catch (err) {
    if (err instanceof KithError) return err
    throw err
  }
  throw new Error('the hub started on a damaged database')
}

describe('a damaged hub.db', () => {
  it('is refused at start when a data page is damaged, naming the file and what to do', async () => {
    const path = filledDb()
    const pages = Math.floor(statSync(path).size / 4096)
    damage(path, Math.floor(pages / 2) * 4096, 4096)
    const err = await refusal(path)
    expect(err.code).toBe('io')
    expect(err.message).toMatch(
      new RegExp(`^database ${path} is damaged \\(sqlite quick_check: .+\\)\\. .*move it aside`),
    )
  })

  it('is refused at start when its header is damaged', async () => {
    const path = filledDb()
    damage(path, 0, 100)
    const err = await refusal(path)
    expect(err.code).toBe('io')
    expect(err.message).toContain(`database ${path} is damaged`)
  })

  it('makes `kith hub --db` exit with one line on stderr, no stack trace', async () => {
    const path = filledDb()
    damage(path, 0, 100)
    const r = await runKith(['hub', '--db', path, '--owner', owner, '--port', '0'], {
      home: join(tempDir(), 'home'),
    })
    expect(r.code).toBe(1)
    const lines = r.stderr.trim().split('\n')
    expect(lines).toEqual([expect.stringMatching(`^kith: database ${path} is damaged`)])
  })
})

describe('database files', () => {
  it('are created 0600, with their WAL and shared-memory files, whatever the umask', async () => {
    const previous = process.umask(0o022)
    try {
      const dir = tempDir()
      const t = await startTestHub({ dbPath: join(dir, 'elsewhere.db') })
      const c = await t.member()
      const e = t.sign({ content: 'private' })
      c.send(['EVENT', e])
      expect((await c.ok(e.id))[2]).toBe(true)
      for (const suffix of ['', '-wal', '-shm']) {
        expect((statSync(join(dir, `elsewhere.db${suffix}`)).mode & 0o777).toString(8)).toBe('600')
      }
    } finally {
      process.umask(previous)
    }
  })
})
