import { closeSync, fsync, openSync } from 'node:fs'
import Database from 'better-sqlite3'
import { KithError } from '../errors.js'
import type { Db } from './db.js'
import type { WalSync } from './wal-sync.js'

/** Frames not yet copied to the database that start a checkpoint (~16 MB of 4 KB pages). */
export const checkpointFrames = 4000

/**
 * Frames committed during a round's fsync that sqlite may copy with its own fsyncs on the main
 * thread (~1 MB); more are copied apart in a further round, up to `maxRounds` in all.
 */
const tailFrames = 256
const maxRounds = 4

interface Frames {
  log: number
  checkpointed: number
}

type Fsync = (fd: number, done: (err: NodeJS.ErrnoException | null) => void) => void

/**
 * Checkpoints of a WAL database whose fsyncs run off the main thread. sqlite's own checkpoint,
 * with synchronous=NORMAL, fsyncs the WAL before it copies frames into the database file and
 * the database file after, both on the calling thread: under `bench:hub` that was ~50 ms a
 * checkpoint, 17 times in 20,000 events, with every in-flight event waiting; without the fsyncs
 * the copy takes ~4 ms. So the writer runs with synchronous=OFF and no automatic checkpoint, and
 * this does each one in three steps:
 *
 * 1. A second connection (`reader`) opens a read transaction. Its snapshot ends at the WAL's
 *    last frame now, and sqlite copies no frame past a reader's snapshot; `WalSync.afterCommit`
 *    is asked to call back once everything committed so far is on disk.
 * 2. Then the writer checkpoints (PASSIVE): it copies only frames that are durable in the WAL.
 * 3. The database file is fsynced on libuv's thread pool while commits go on appending to the
 *    WAL. Only when that fsync is done does the reader end its transaction. sqlite restarts the
 *    WAL (writes new frames over old ones) only when no reader holds a snapshot in it, so a frame
 *    is never overwritten before its copy in the database file is on disk.
 * 4. What was committed during that fsync is copied by sqlite's own checkpoint, with its fsyncs
 *    (synchronous=NORMAL for that call), on the main thread: a few hundred frames, not
 *    thousands (when more came, steps 1–3 run again for them first, a few times at most). sqlite marks frames copied only once its fsync of the database succeeds, and
 *    restarts the WAL only when every frame is copied. Without this step a WAL under steady
 *    load would never be wholly copied, so never restarted, and would grow without end.
 *
 * A crash at any step leaves every acknowledged event in the WAL, the database file, or both.
 */
export class WalCheckpointer {
  private state: 'idle' | 'waiting' | 'syncing' | 'failed' = 'idle'
  private readonly reader: Db
  private readonly beginRead: Database.Statement
  private fd: number | undefined
  private idle: (() => void)[] = []
  /** Rounds of steps 1–3 in this checkpoint. */
  private rounds = 0
  /** Checkpoints that copied frames. */
  checkpoints = 0
  /** The last failure to make a checkpoint durable; the next commit tries again. */
  lastError: KithError | undefined

  constructor(
    private readonly db: Db,
    private readonly path: string,
    private readonly walSync: WalSync,
    private readonly opts: { frames?: number; fsync?: Fsync } = {},
  ) {
    try {
      this.fd = openSync(path, 'r')
      this.reader = new Database(path)
      this.reader.pragma('busy_timeout = 5000')
      // It reads one page: no cache to speak of.
      this.reader.pragma('cache_size = 8')
    } catch (cause) {
      if (this.fd !== undefined) closeSync(this.fd)
      throw new KithError('io', `cannot open ${path} to checkpoint it`, { cause })
    }
    this.beginRead = this.reader.prepare('SELECT 1 FROM sqlite_master LIMIT 1')
  }

  /** After each commit: starts a checkpoint once enough frames wait to be copied. */
  committed(): void {
    if (this.state === 'failed') {
      this.syncDatabase()
      return
    }
    if (this.state !== 'idle') return
    const [wal] = this.db.pragma('wal_checkpoint(NOOP)') as Frames[]
    if (wal === undefined || wal.log - wal.checkpointed < (this.opts.frames ?? checkpointFrames)) {
      return
    }
    this.rounds = 0
    this.copyApart()
  }

  /** Steps 1–3: copy what is committed now, fsync the database file off the main thread. */
  private copyApart(): void {
    this.reader.exec('BEGIN')
    this.beginRead.get()
    this.state = 'waiting'
    this.rounds++
    this.walSync.afterCommit((err) => {
      if (this.fd === undefined) return
      if (err !== undefined) {
        // The WAL is not known to be on disk: copy nothing, try again after a later commit.
        this.release()
        return
      }
      this.db.pragma('wal_checkpoint(PASSIVE)')
      this.checkpoints++
      this.syncDatabase()
    })
  }

  private syncDatabase(): void {
    const fd = this.fd
    if (fd === undefined) return
    this.state = 'syncing'
    ;(this.opts.fsync ?? fsync)(fd, (err) => {
      if (this.fd === undefined) return
      if (err !== null) {
        // The copies may not be on disk: the reader keeps the WAL from being overwritten.
        this.lastError = new KithError('io', `fsync ${this.path}: ${err.message}`)
        this.state = 'failed'
        return
      }
      this.lastError = undefined
      const [wal] = this.db.pragma('wal_checkpoint(NOOP)') as Frames[]
      const tail = wal === undefined ? 0 : wal.log - wal.checkpointed
      if (tail > tailFrames && this.rounds < maxRounds) {
        // Much was committed during the fsync: copy it apart too. Ending the read first is
        // safe: frames wait to be copied, so sqlite cannot restart the WAL.
        this.reader.exec('COMMIT')
        this.copyApart()
        return
      }
      this.release()
      if (tail > 0) this.copyTail()
    })
  }

  /** Step 4: sqlite's own synced checkpoint of what was committed during step 3. */
  private copyTail(): void {
    this.db.pragma('synchronous = normal')
    try {
      this.db.pragma('wal_checkpoint(PASSIVE)')
    } catch (cause) {
      // sqlite marked nothing copied: the WAL keeps every frame; the next round copies them.
      this.lastError = new KithError('io', `checkpoint ${this.path}: ${String(cause)}`, { cause })
    } finally {
      this.db.pragma('synchronous = off')
    }
  }

  private release(): void {
    this.reader.exec('COMMIT')
    this.state = 'idle'
    for (const resolve of this.idle.splice(0)) resolve()
  }

  /** Resolves when no checkpoint is under way (a failed one still holds the WAL). */
  drained(): Promise<void> {
    if (this.state === 'idle' || this.state === 'failed') return Promise.resolve()
    return new Promise((resolve) => this.idle.push(resolve))
  }

  /**
   * Ends the reader's transaction and closes it. The writer's connection must then close with
   * synchronous=NORMAL: its closing checkpoint fsyncs the database before it deletes the WAL.
   */
  close(): void {
    if (this.fd === undefined) return
    if (this.reader.inTransaction) this.reader.exec('COMMIT')
    this.reader.close()
    closeSync(this.fd)
    this.fd = undefined
    for (const resolve of this.idle.splice(0)) resolve()
  }
}
