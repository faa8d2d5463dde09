import { Worker } from 'node:worker_threads'
import { KithError } from '../errors.js'
import type { WriterData, WriterReply, WriterRequest } from './batch-writer-worker.js'
import type { StoreOutcome, WrittenBatch } from './event-store.js'

export interface BatchWriterOptions extends WriterData {
  /** The writer thread exits after this long without a batch; the next busy spell starts it. */
  idleMs?: number
  log?: (line: string) => void
}

/** A writer thread costs ~10 MB with its page cache; starting it again, ~50 ms. */
export const defaultWriterIdleMs = 30_000

/**
 * The worker's code, from dist/ whichever copy of this file runs: src/store and dist/store are
 * both two folders below the package, and the tests (which run src/) build dist first.
 */
const workerUrl = new URL('../../dist/store/batch-writer-worker.js', import.meta.url)

interface Waiting {
  resolve: (w: WrittenBatch) => void
  reject: (e: Error) => void
}

/**
 * The hub's store writes on a thread of their own (issue 34). At a million events a commit's
 * inserts and index updates cost the main thread ~80 µs an event, the largest single share of its
 * time under ingest; on its own connection in a worker they run beside the main thread's reading,
 * parsing, admission and answers. Started on demand (`wake`, when batches show a busy spell) and
 * retired after `idleMs` idle, so a quiet hub holds no second thread or page cache. One batch at
 * a time, answered in order; a batch whose transaction fails is rolled back and rejected.
 */
export class BatchWriter {
  private worker: Worker | undefined
  private isReady = false
  /** The running thread said it was ready once (a retiring one is not ready, but did start). */
  private started = false
  /** Set when a writer could not start: the hub writes on its main thread from then on. */
  private disabled = false
  private readonly waiting = new Map<number, Waiting>()
  private nextId = 1
  private idleTimer: NodeJS.Timeout | undefined
  private closing: Promise<void> | undefined
  private exited: Promise<void> | undefined
  /** Called once nothing is in flight (`close` waits for it). */
  private onDrained: (() => void)[] = []
  /** Batches committed by the thread so far (for tests and the hub's stats). */
  batches = 0

  constructor(private readonly opts: BatchWriterOptions) {}

  /** True when a batch can go to the thread now. */
  get ready(): boolean {
    return this.isReady && this.closing === undefined
  }

  /** Starts the thread unless it runs, is starting, could not start, or the writer closes. */
  wake(): void {
    if (this.worker !== undefined || this.disabled || this.closing !== undefined) return
    const worker = new Worker(workerUrl, {
      workerData: { path: this.opts.path, synchronous: this.opts.synchronous } satisfies WriterData,
      // A batch is at most ~4 MiB of JSON (group-commit.ts): a small heap is plenty.
      resourceLimits: { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 64 },
    })
    this.worker = worker
    this.exited = new Promise((resolve) => worker.once('exit', () => resolve()))
    worker.on('message', (msg: WriterReply) => this.onReply(msg))
    worker.on('error', (err) => this.opts.log?.(`store writer: ${err.message}`))
    worker.on('exit', (code) => {
      const started = this.started
      this.worker = undefined
      this.isReady = false
      this.started = false
      clearTimeout(this.idleTimer)
      const error = new KithError('io', `the store's writer thread exited (${code})`)
      for (const w of this.waiting.values()) w.reject(error)
      this.waiting.clear()
      this.drained()
      if (!started && this.closing === undefined && !this.disabled) {
        this.disabled = true
        this.opts.log?.('store writer: the thread did not start; writing on the main thread')
      }
    })
  }

  /** Commits `raws` (canonical JSON of each event) in one transaction on the thread. */
  write(raws: string[]): Promise<WrittenBatch> {
    const worker = this.worker
    if (!this.ready || worker === undefined)
      return Promise.reject(new KithError('io', "the store's writer thread is not running"))
    clearTimeout(this.idleTimer)
    this.idleTimer = undefined
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject })
      worker.postMessage({ id, raws } satisfies WriterRequest)
    })
  }

  private onReply(msg: WriterReply): void {
    if ('ready' in msg) {
      this.isReady = true
      this.started = true
      this.idleLater()
      return
    }
    if ('failed' in msg) {
      this.disabled = true
      this.opts.log?.(
        `store writer: cannot open the store (${msg.failed}); writing on the main thread`,
      )
      return
    }
    const w = this.waiting.get(msg.id)
    if (w === undefined) return
    this.waiting.delete(msg.id)
    if (this.waiting.size === 0) {
      this.idleLater()
      this.drained()
    }
    if ('error' in msg) {
      w.reject(
        new KithError(
          'io',
          `store write failed: ${msg.error}`,
          msg.code === undefined ? undefined : { reason: msg.code },
        ),
      )
      return
    }
    this.batches++
    w.resolve({ outcomes: msg.outcomes as StoreOutcome[], usage: msg.usage })
  }

  private drained(): void {
    for (const resolve of this.onDrained.splice(0)) resolve()
  }

  private idleLater(): void {
    clearTimeout(this.idleTimer)
    this.idleTimer = setTimeout(() => {
      if (this.waiting.size > 0) return
      void this.retire()
    }, this.opts.idleMs ?? defaultWriterIdleMs)
    this.idleTimer.unref()
  }

  /** Closes the thread's connection and ends it; what is in flight is answered first. */
  private async retire(): Promise<void> {
    const worker = this.worker
    if (worker === undefined) return
    this.isReady = false
    worker.postMessage({ close: true } satisfies WriterRequest)
    await this.exited
  }

  /** Running now (started and not retired): for tests and stats. */
  get running(): boolean {
    return this.worker !== undefined
  }

  /** Waits for the batch in flight, closes the thread's connection and ends the thread. */
  close(): Promise<void> {
    return (this.closing ??= (async () => {
      clearTimeout(this.idleTimer)
      if (this.waiting.size > 0) await new Promise<void>((resolve) => this.onDrained.push(resolve))
      await this.retire()
    })())
  }
}
