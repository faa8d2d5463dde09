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
}

/** Opens a sqlite file in WAL mode and brings its schema up to date inside one transaction. */
export function openDatabase(
  path: string,
  migrations: readonly Migration[],
  opts: OpenOptions = {},
): Db {
  let db: Db
  try {
    db = new Database(path)
  } catch (cause) {
    throw new KithError('io', `cannot open database ${path}`, { cause })
  }
  db.pragma('journal_mode = WAL')
  db.pragma(`synchronous = ${opts.synchronous ?? 'full'}`)
  db.pragma('busy_timeout = 5000')
  const current = db.pragma('user_version', { simple: true }) as number
  if (current > migrations.length) {
    db.close()
    throw new KithError(
      'io',
      `${path} has schema version ${current}, newer than this kith (${migrations.length}); upgrade kith`,
    )
  }
  db.transaction(() => {
    for (let v = current; v < migrations.length; v++) {
      migrations[v]?.(db)
      db.pragma(`user_version = ${v + 1}`)
    }
  })()
  return db
}
