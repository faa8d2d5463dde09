import { closeSync, existsSync, openSync } from 'node:fs'
import Database from 'better-sqlite3'
import { KithError } from '../errors.js'

export type Db = Database.Database

/** Each entry moves the schema one version up; never edit a released entry, append one. */
export type Migration = (db: Db) => void

export interface OpenOptions {
  /**
   * `full` fsyncs the WAL on every commit, so an acknowledged write survives power loss; `normal`
   * survives a process crash only. Hubs default to `full`: OK true promises durability.
   */
  synchronous?: 'full' | 'normal'
  /**
   * With `full`: sqlite commits without fsync (synchronous=NORMAL) and the owner makes each
   * commit durable with a WalSync before acknowledging it, so the fsync does not hold the main
   * thread (store/wal-sync.ts). The hub does; node.db keeps sqlite's own fsync.
   */
  syncApart?: boolean
  /** sqlite's page cache for this connection, KiB (default `pageCacheKiB`). */
  pageCacheKiB?: number
  /**
   * Run sqlite's quick_check before use and refuse a damaged file: a damaged page would otherwise
   * fail every read while writes still succeed. It reads the whole file (~2.2 s at 2 GB): a hub
   * does it here only after an unclean stop, else on a worker while it serves (integrity.ts).
   */
  check?: boolean
  /**
   * Told before the schema of a file that already had one is upgraded (versions `from` → `to`),
   * so its owner can say why start-up pauses: an upgrade may rewrite every row of a table.
   */
  onUpgrade?: (from: number, to: number) => void
}

/**
 * sqlite's page cache per connection, KiB. better-sqlite3 builds sqlite with 16 MB, which a busy
 * hub fills and keeps: 12–13 MB of the hub's ~98 MB peak under `bench:hub`. 8 MB takes ~8 MB off
 * that peak with ingest unchanged; queries over cold history read more pages from the OS's file
 * cache (in-process, window·500 over 20,000 events: ~600 µs against ~550 with 16 MB, ~870 with 4).
 */
export const pageCacheKiB = 8000

/** sqlite error codes that mean the file itself is damaged or not a database. */
export const damagedCodes: ReadonlySet<string> = new Set([
  'SQLITE_CORRUPT',
  'SQLITE_NOTADB',
  'SQLITE_CORRUPT_INDEX',
])

/** The error a damaged database is refused with, before use or by a check in the background. */
export function damaged(path: string, detail: string): KithError {
  const what = detail
    .replace(/\*\*\* in database main \*\*\*/g, '')
    .replace(/\s+/g, ' ')
    .trim()
  return new KithError(
    'io',
    `database ${path} is damaged (${what}). Stop whatever uses it, move it aside with its -wal ` +
      `and -shm files (mv '${path}' '${path}.damaged') and restore a backup, or salvage what ` +
      `is left (sqlite3 '${path}.damaged' .recover | sqlite3 '${path}'); or start with an empty ` +
      'one: nodes send their grants and outboxes again.',
  )
}

/**
 * Creates `path` as 0600 before sqlite does: sqlite gives the -wal and -shm files the mode of the
 * database, and a database holds every event, private channels included. An existing file keeps
 * the mode its operator gave it.
 */
function createPrivate(path: string): void {
  if (path === ':memory:' || path === '' || existsSync(path)) return
  try {
    closeSync(openSync(path, 'wx', 0o600))
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'EEXIST') return
    throw new KithError('io', `cannot create database ${path}`, { cause })
  }
}

/** Opens a sqlite file in WAL mode and brings its schema up to date inside one transaction. */
export function openDatabase(
  path: string,
  migrations: readonly Migration[],
  opts: OpenOptions = {},
): Db {
  createPrivate(path)
  let db: Db
  try {
    db = new Database(path)
  } catch (cause) {
    throw new KithError('io', `cannot open database ${path}`, { cause })
  }
  try {
    db.pragma('journal_mode = WAL')
    const sync = opts.synchronous ?? 'full'
    db.pragma(`synchronous = ${sync === 'full' && opts.syncApart === true ? 'normal' : sync}`)
    // A hub writes all the time: checkpoint every ~16 MB of WAL rather than sqlite's ~4 MB. A
    // page rewritten by many commits is copied to the database once per checkpoint, which cut
    // the hub's main-thread write time by a fifth (docs/performance.md, issue 18).
    if (opts.syncApart === true) db.pragma('wal_autocheckpoint = 4000')
    db.pragma('busy_timeout = 5000')
    db.pragma(`cache_size = -${opts.pageCacheKiB ?? pageCacheKiB}`)
    if (opts.check === true) {
      const rows = db.pragma('quick_check(3)') as { quick_check: string }[]
      const problems = rows.map((r) => r.quick_check).filter((r) => r !== 'ok')
      if (problems.length > 0) throw damaged(path, `sqlite quick_check: ${problems.join('; ')}`)
    }
    const current = db.pragma('user_version', { simple: true }) as number
    if (current > migrations.length) {
      throw new KithError(
        'io',
        `${path} has schema version ${current}, newer than this kith (${migrations.length}); upgrade kith`,
      )
    }
    if (current > 0 && current < migrations.length) opts.onUpgrade?.(current, migrations.length)
    db.transaction(() => {
      for (let v = current; v < migrations.length; v++) {
        migrations[v]?.(db)
        db.pragma(`user_version = ${v + 1}`)
      }
    })()
  } catch (err) {
    db.close()
    if (err instanceof KithError) throw err
    const code = (err as { code?: unknown }).code
    if (typeof code === 'string' && damagedCodes.has(code)) {
      throw damaged(path, (err as Error).message)
    }
    throw new KithError('io', `cannot use database ${path}: ${String(err)}`, { cause: err })
  }
  return db
}
