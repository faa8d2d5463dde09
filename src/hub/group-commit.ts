import type { NostrEvent } from '../events/event.js'
import type { EventStore, StoreOutcome } from '../store/event-store.js'

type Done = (outcome: StoreOutcome | Error) => void

export interface GroupCommitOptions {
  /** Commit at once when this many events wait. */
  maxBatch: number
  /** Never hold an event longer than this for company. */
  maxDelayMs: number
  /** True while more events are on their way (being verified); an idle hub commits at once. */
  moreComing: () => boolean
  /**
   * Calls back once what has committed is durable; the store's `afterCommit` unless given (a
   * test holds it to see that nothing is acknowledged before).
   */
  durable?: (done: (err?: Error) => void) => void
}

/**
 * Group commit: events are written in one sqlite transaction and each `done` runs only after
 * that transaction has committed, so OK true always follows durability. Batches grow under load
 * (while verification is still in flight, up to maxBatch or maxDelayMs) because a commit's cost
 * is mostly per page, not per event: measured here, 20-event batches cost ~35 µs of CPU per
 * event and 200-event batches ~19 µs. With nothing in flight an event commits immediately.
 * When the store syncs apart (the hub's), `done` waits for the WAL's fsync, which runs off the
 * main thread, so the next batch is read, verified and committed while the disk syncs.
 */
export class GroupCommit {
  private batch: NostrEvent[] = []
  private raws: string[] = []
  private callbacks: Done[] = []
  private firstAt = 0
  private immediate: NodeJS.Immediate | undefined
  private timer: NodeJS.Timeout | undefined

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

  /** Writes whatever is pending now; also called on shutdown so nothing accepted is lost. */
  flush(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer)
      this.timer = undefined
    }
    const events = this.batch
    const raws = this.raws
    const callbacks = this.callbacks
    if (events.length === 0) return
    this.batch = []
    this.raws = []
    this.callbacks = []
    let outcomes: StoreOutcome[]
    try {
      outcomes = this.store.insertBatch(events, raws)
    } catch (err) {
      // The transaction rolled back: nothing of this batch is stored, and each sender is told.
      const error = err instanceof Error ? err : new Error(String(err))
      for (const done of callbacks) done(error)
      return
    }
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

  get pending(): number {
    return this.batch.length
  }
}
