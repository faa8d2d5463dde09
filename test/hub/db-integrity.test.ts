import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { KithError } from '../../src/errors.js'
import { publicKeyOf, signEvent } from '../../src/events/event.js'
import { startHub, type Hub } from '../../src/hub/server.js'
import { EventStore } from '../../src/store/event-store.js'
import { hubMigrations } from '../../src/store/hub-schema.js'
import { spawnHub } from '../../scripts/hub-process.js'
import { runKith } from '../helpers/cli.js'
import { startTestHub } from '../helpers/hub.js'
import { RawClient } from '../helpers/raw-client.js'
import { damage, damagePage, eventsLeafPage } from '../helpers/db-damage.js'
import { tempDir } from '../helpers/tmp.js'

const ownerSk = generateSecretKey()
const owner = publicKeyOf(ownerSk)

/** A closed hub.db holding 300 events (its WAL folded in on close), at the hub's schema. */
function filledDb(): string {
  const path = join(tempDir(), 'hub.db')
  const store = new EventStore(path, { migrations: hubMigrations })
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

/** Starts a hub on `path` in this process, keeping its log lines in `logs`. */
async function hubOn(path: string, logs: string[]): Promise<Hub> {
  const hub = await startHub({
    port: 0,
    dbPath: path,
    founder: owner,
    verifyWorkers: 0,
    log: (line) => logs.push(line),
  })
  onTestFinished(() => hub.close())
  return hub
}

/**
 * What a hub on `path` is refused with: thrown at start (a check before serving, or a damaged
 * page read at start), or found by its check in the background (after a clean stop).
 */
async function refusal(path: string, logs: string[] = []): Promise<KithError> {
  let hub: Hub
  try {
    hub = await hubOn(path, logs)
  } catch (err) {
    if (err instanceof KithError) return err
    throw err
  }
  const damage = await hub.checked
  if (damage !== undefined) return damage
  throw new Error('the hub served a damaged database')
}

/** A member's event through a hub at `url`, acknowledged (so it is in the -wal, fsynced). */
async function publish(url: string): Promise<void> {
  const c = await RawClient.connect(url)
  try {
    expect((await c.auth(url, ownerSk))[2]).toBe(true)
    const e = signEvent({ kind: 9, created_at: 1_700_001_000, tags: [], content: 'late' }, ownerSk)
    c.send(['EVENT', e])
    expect((await c.ok(e.id))[2]).toBe(true)
  } finally {
    c.close()
  }
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

describe('the check of hub.db at start (issue 34: quick_check reads the whole file)', () => {
  it('after a clean stop: serves at once, and its check in the background stops it on a damaged page', async () => {
    const path = filledDb()
    expect(existsSync(`${path}-wal`)).toBe(false)
    damagePage(path, eventsLeafPage(path))
    const logs: string[] = []
    // It starts: the damaged page is not one its start reads.
    const hub = await hubOn(path, logs)
    expect(logs).toContain(
      `integrity: ${path} was closed cleanly: checking it (quick_check) in the background`,
    )
    const damage = await hub.checked
    expect(damage?.code).toBe('io')
    expect(damage?.message).toMatch(
      new RegExp(`^database ${path} is damaged \\(sqlite quick_check: .+\\)\\. .*move it aside`),
    )
    expect(logs.at(-1)).toBe(`integrity: ${damage?.message} Stopping the hub.`)
    // And it has stopped serving.
    await expect(RawClient.connect(hub.url)).rejects.toThrow()
  })

  it('after a clean stop: `kith hub` exits 1 with the damage, as when refused before serving', async () => {
    const path = filledDb()
    damagePage(path, eventsLeafPage(path))
    const r = await runKith(['hub', '--db', path, '--owner', owner, '--port', '0'], {
      home: join(tempDir(), 'home'),
    })
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/kith hub listening on/)
    expect(r.stderr).toMatch(
      /kith hub: integrity: .* was closed cleanly: checking it .* background/,
    )
    expect(r.stderr.trim().split('\n').at(-1)).toMatch(
      new RegExp(`^kith: database ${path} is damaged`),
    )
  })

  it('a `kith hub` stopped by SIGTERM leaves no -wal, and the next start checks in the background', async () => {
    const path = filledDb()
    const home = join(tempDir(), 'home')
    const hub = await spawnHub(['--db', path, '--owner', owner], { env: { KITH_HOME: home } })
    onTestFinished(async () => {
      await hub.stop()
    })
    await publish(hub.url)
    expect(statSync(`${path}-wal`).size).toBeGreaterThan(0)
    expect(await hub.stop()).toBe(0)
    // The hub's close was the last connection's: sqlite checkpointed and removed the -wal.
    expect(existsSync(`${path}-wal`)).toBe(false)
    const logs: string[] = []
    const again = await hubOn(path, logs)
    expect(logs).toContain(
      `integrity: ${path} was closed cleanly: checking it (quick_check) in the background`,
    )
    expect(logs.join('\n')).not.toMatch(/before serving/)
    expect(await again.checked).toBeUndefined()
    expect(logs.at(-1)).toMatch(new RegExp(`^integrity: ${path} checked in the background: ok`))
    expect(again.store.count()).toBe(301)
  })

  it('after `kill -9`: checks before serving, and refuses a damaged page without serving', async () => {
    const path = filledDb()
    const page = eventsLeafPage(path)
    const home = join(tempDir(), 'home')
    const hub = await spawnHub(['--db', path, '--owner', owner], { env: { KITH_HOME: home } })
    onTestFinished(async () => {
      await hub.stop()
    })
    await publish(hub.url)
    const exited = new Promise((resolve) => hub.child.once('exit', resolve))
    hub.child.kill('SIGKILL')
    await exited
    const walBytes = statSync(`${path}-wal`).size
    expect(walBytes).toBeGreaterThan(0)
    damagePage(path, page)
    const logs: string[] = []
    // Refused by startHub itself: the check ran before it served.
    await expect(hubOn(path, logs)).rejects.toThrow(
      new RegExp(`^database ${path} is damaged \\(sqlite quick_check: .+\\)\\. .*move it aside`),
    )
    expect(logs).toEqual([
      `integrity: ${path} was not closed cleanly (its -wal holds ${walBytes} bytes): ` +
        'checking it (quick_check) before serving',
    ])
  })

  it('after `kill -9` with the file whole: checks before serving, then serves what was acknowledged', async () => {
    const path = filledDb()
    const hub = await spawnHub(['--db', path, '--owner', owner], {
      env: { KITH_HOME: join(tempDir(), 'home') },
    })
    onTestFinished(async () => {
      await hub.stop()
    })
    await publish(hub.url)
    const exited = new Promise((resolve) => hub.child.once('exit', resolve))
    hub.child.kill('SIGKILL')
    await exited
    const logs: string[] = []
    const again = await hubOn(path, logs)
    expect(logs[0]).toMatch(
      new RegExp(`^integrity: ${path} was not closed cleanly .* before serving$`),
    )
    expect(logs[1]).toMatch(new RegExp(`^integrity: ${path} checked before serving: ok`))
    expect(logs.join('\n')).not.toMatch(/background/)
    expect(await again.checked).toBeUndefined()
    expect(again.store.count()).toBe(301)
  })
})

describe('database files', () => {
  it('are created 0600, with their WAL and shared-memory files, whatever the umask', async () => {
    const previous = process.umask(0o022)
    try {
      const dir = tempDir()
      const t = await startTestHub({ dbPath: join(dir, 'elsewhere.db') })
      // A file the hub creates is not checked: it holds nothing yet.
      expect(t.logs).toContain(`integrity: ${join(dir, 'elsewhere.db')} is new: nothing to check`)
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
