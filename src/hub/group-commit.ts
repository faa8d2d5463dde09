import type { NostrEvent } from '../events/event.js'
import type { EventStore, StoreOutcome, WrittenBatch } from '../store/event-store.js'

type Done = (outcome: StoreOutcome | Error) => void

export interface GroupCommitOptions {
  /** Commit at once when this many events wait. */
  maxBatch: number
  /** Never hold an event longer than this for company. */
  maxDelayMs: number
  /** Commit at once when the waiting events' JSON reaches this many characters (default 4 MiB). */
  maxBatchChars?: number | undefined
  /** True while more events are on their way (being verified); an idle hub commits at once. */
  moreComing: () => boolean
  /**
   * Calls back once what has committed is durable; the store's `afterCommit` unless given (a
   * test holds it to see that nothing is acknowledged before).
   */
  durable?: (done: (err?: Error) => void) => void
  /**
   * A writer thread (store/batch-writer.ts) to commit on when it is ready; woken when a batch
   * written here holds `wakeAt` events or more (a busy spell).
   */
  writer?: OffThreadWriter | undefined
  /** Events in one batch that wake the writer thread (default 16). */
  wakeAt?: number | undefined
}

/** What GroupCommit needs of a writer thread (BatchWriter). */
export interface OffThreadWriter {
  readonly ready: boolean
  wake(): void
  write(raws: string[]): Promise<WrittenBatch>
  close(): Promise<void>
}

/** Events in a batch that show a busy spell: each commit then had company waiting. */
const defaultWakeAt = 16
/**
 * A batch's JSON, at most (plus one event): bounds what a commit holds in memory, here and on
 * the writer thread (whose heap is capped), when the events are large (frames up to 128 KiB).
 */
const defaultMaxBatchChars = 4 * 1024 * 1024

/**
 * Group commit: events are written in one sqlite transaction and each `done` runs only after
 * that transaction has committed, so OK true always follows durability. Batches grow under load
 * (while verification is still in flight, up to maxBatch or maxDelayMs) because a commit's cost
 * is mostly per page, not per event: measured here, 20-event batches cost ~35 µs of CPU per
 * event and 200-event batches ~19 µs. With nothing in flight an event commits immediately.
 * When the store syncs apart (the hub's), `done` waits for the WAL's fsync, which runs off the
 * main thread, so the next batch is read, verified and committed while the disk syncs. With a
 * writer thread, batches are committed there, one at a time, while the next one gathers.
 */
export class GroupCommit {
  private batch: NostrEvent[] = []
  private raws: string[] = []
  private callbacks: Done[] = []
  private firstAt = 0
  private chars = 0
  private immediate: NodeJS.Immediate | undefined
  private timer: NodeJS.Timeout | undefined
  /** A batch is on the writer thread: the next waits for its answer, then goes at once. */
  private writing = false
  private onIdle: (() => void)[] = []

  constructor(
    private readonly store: EventStore,
    private readonly opts: GroupCommitOptions,
  ) {}

  /** Queues `event` (with `raw`, its JSON.stringify) for the next commit. */
  submit(event: NostrEvent, raw: string, done: Done): void {
    if (this.batch.length === 0) this.firstAt = performance.now()
    this.batch.push(event)
    this.raws.push(raw)
    this.callbacks.push(done)
    this.chars += raw.length
    this.immediate ??= setImmediate(() => {
      this.immediate = undefined
      this.maybeFlush()
    })
  }

  /**
   * Commits now what would be committed at this turn's check anyway. The hub's background work
   * (REQ slices, NIP-77 steps) calls it before each of its turns: their immediates were queued
   * before the frames of this poll were read, so the commit's own check would run after up to a
   * turn of their work, and every EVENT's OK with it.
   */
  flushIfDue(): void {
    if (this.batch.length > 0 && this.due()) this.flush()
  }

  private due(): boolean {
    return (
      this.batch.length >= this.opts.maxBatch ||
      this.chars >= (this.opts.maxBatchChars ?? defaultMaxBatchChars) ||
      performance.now() - this.firstAt >= this.opts.maxDelayMs ||
      !this.opts.moreComing()
    )
  }

  private maybeFlush(): void {
    if (this.batch.length === 0) return
    if (this.due()) {
      this.flush()
      return
    }
    const waited = performance.now() - this.firstAt
    this.timer ??= setTimeout(() => {
      this.timer = undefined
      this.flush()
    }, this.opts.maxDelayMs - waited)
  }

  /**
   * Writes whatever is pending now, in batches of at most `maxBatch` events and ~`maxBatchChars`
   * of JSON; with the writer thread busy, once it answers.
   */
  flush(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer)
      this.timer = undefined
    }
    while (!this.writing && this.batch.length > 0) this.writeOne()
  }

  private writeOne(): void {
    const cap = this.opts.maxBatchChars ?? defaultMaxBatchChars
    let n = 0
    let chars = 0
    while (n < this.batch.length && n < this.opts.maxBatch) {
      const size = this.raws[n]!.length
      if (n > 0 && chars + size > cap) break
      chars += size
      n++
    }
    const events = this.batch.splice(0, n)
    const raws = this.raws.splice(0, n)
    const callbacks = this.callbacks.splice(0, n)
    this.chars -= chars
    const writer = this.opts.writer
    if (writer?.ready === true) {
      this.writing = true
      writer.write(raws).then(
        (written) => {
          this.store.applyUsage(written.usage)
          this.acknowledge(callbacks, written.outcomes)
          this.written()
        },
        (err: unknown) => {
          // Rolled back, or the thread died: nothing of this batch is known stored.
          const error = err instanceof Error ? err : new Error(String(err))
          for (const done of callbacks) done(error)
          this.written()
        },
      )
      return
    }
    let outcomes: StoreOutcome[]
    try {
      outcomes = this.store.insertBatch(events, raws)
    } catch (err) {
      // The transaction rolled back: nothing of this batch is stored, and each sender is told.
      const error = err instanceof Error ? err : new Error(String(err))
      for (const done of callbacks) done(error)
      return
    }
    if (events.length >= (this.opts.wakeAt ?? defaultWakeAt)) writer?.wake()
    this.acknowledge(callbacks, outcomes)
  }

  /** The writer thread answered: what waited behind its batch goes now. */
  private written(): void {
    this.writing = false
    if (this.batch.length > 0) this.flush()
    if (!this.writing) for (const resolve of this.onIdle.splice(0)) resolve()
  }

  private acknowledge(callbacks: Done[], outcomes: StoreOutcome[]): void {
    const durable = this.opts.durable ?? ((done) => this.store.afterCommit(done))
    durable((err) => {
      if (err !== undefined) {
        // Committed, but not known to be on disk: nobody is told it is stored. A sender that
        // tries again gets "duplicate", which is then true.
        for (const done of callbacks) done(err)
        return
      }
      callbacks.forEach((done, i) => done(outcomes[i] ?? new Error('missing store outcome')))
    })
  }

  /**
   * On shutdown: writes what is pending, waits for the writer thread's last answer and ends the
   * thread, so nothing accepted is lost and the store's own connection closes last.
   */
  async close(): Promise<void> {
    this.flush()
    while (this.writing) await new Promise<void>((resolve) => this.onIdle.push(resolve))
    this.flush()
    await this.opts.writer?.close()
  }

  get pending(): number {
    return this.batch.length
  }
}
