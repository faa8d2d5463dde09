import { closeSync, fsync, openSync } from 'node:fs'
import { KithError } from '../errors.js'

type Synced = (err?: Error) => void

/**
 * Durability of a WAL database off the main thread. sqlite runs with synchronous=NORMAL (a
 * commit writes its frames to the -wal file without fsync) and the writer asks `afterCommit`
 * before it acknowledges anything: the callback runs once an fsync of the -wal file that began
 * after that commit has finished, so what was committed is on disk. The fsync runs on libuv's
 * thread pool, so the main thread reads and verifies meanwhile; commits that land while one
 * fsync runs share the next. (This is what synchronous=FULL would do on the main thread, where
 * better-sqlite3 holds the event loop for the whole fsync.)
 *
 * Sound because a commit's frames leave the -wal file only through a checkpoint, and with
 * synchronous=NORMAL sqlite syncs the WAL before a checkpoint copies it and the database file
 * after: committed frames are on disk either in the WAL (our fsync) or in the database (the
 * checkpoint's). fsync works on the file, not the descriptor, so our own descriptor covers what
 * sqlite's wrote.
 */
export class WalSync {
  private fd: number | undefined
  private running = false
  /** Committed since the running fsync began (or none runs): they need one that starts later. */
  private next: Synced[] = []
  private idle: (() => void)[] = []
  /** fsyncs run so far (several commits share one under load). */
  syncs = 0

  constructor(private readonly walPath: string) {
    try {
      // sqlite creates the -wal file on first use with the database's mode; if it is not there
      // yet, create it as sqlite would for a 0600 database (an empty WAL is a valid one).
      this.fd = openSync(walPath, 'a+', 0o600)
    } catch (cause) {
      throw new KithError('io', `cannot open ${walPath} to sync it`, { cause })
    }
  }

  /** Calls `done` once everything committed before this call is on disk (or the sync failed). */
  afterCommit(done: Synced): void {
    if (this.fd === undefined) {
      done(new KithError('io', `${this.walPath} is closed`))
      return
    }
    this.next.push(done)
    if (!this.running) this.start()
  }

  private start(): void {
    const fd = this.fd
    if (fd === undefined || this.next.length === 0) {
      this.running = false
      for (const resolve of this.idle.splice(0)) resolve()
      return
    }
    this.running = true
    const waiting = this.next
    this.next = []
    this.syncs++
    fsync(fd, (err) => {
      const error =
        err === null ? undefined : new KithError('io', `fsync ${this.walPath}: ${err.message}`)
      try {
        for (const done of waiting) done(error)
      } finally {
        // A callback that throws must not leave later commits waiting for an fsync never begun.
        this.start()
      }
    })
  }

  /** Resolves when no fsync runs or waits. */
  drained(): Promise<void> {
    if (!this.running) return Promise.resolve()
    return new Promise((resolve) => this.idle.push(resolve))
  }

  /** Closes the descriptor; await `drained()` first, or a running fsync's answer is an error. */
  close(): void {
    if (this.fd !== undefined) closeSync(this.fd)
    this.fd = undefined
  }
}
