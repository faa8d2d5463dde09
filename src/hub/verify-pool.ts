import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import { KithError } from '../errors.js'
import type { NostrEvent } from '../events/event.js'
import { loadWasmVerifier, verifyWithWasm, type VerifyResult } from '../events/verify-wasm.js'

interface Pending {
  event: NostrEvent
  /** The event as canonical JSON: strings cross to a worker far cheaper than objects. */
  raw: string
  resolve: (r: VerifyResult) => void
  reject: (e: Error) => void
}

interface Slot {
  worker: Worker
  inFlight: Map<number, Pending[]>
  load: number
}

/**
 * Signature verification off the main thread. Requests that arrive in the same turn of the
 * event loop are batched (one postMessage per worker, not per event) and spread over the
 * workers by load. With `workers: 0` it verifies inline, for embedded and test use.
 */
export class VerifyPool {
  private readonly slots: Slot[] = []
  private queue: Pending[] = []
  private scheduled = false
  private nextBatch = 1
  private closed = false

  private constructor(private readonly workerCount: number) {}

  static async create(workers = defaultWorkerCount()): Promise<VerifyPool> {
    const pool = new VerifyPool(workers)
    if (workers === 0) await loadWasmVerifier()
    await Promise.all(Array.from({ length: workers }, () => pool.spawn()))
    return pool
  }

  get size(): number {
    return this.workerCount
  }

  /** Events queued or being verified right now. */
  get inFlight(): number {
    let n = this.queue.length
    for (const slot of this.slots) n += slot.load
    return n
  }

  /** Verifies `event`; `raw` must be JSON.stringify(event), which the caller has already made. */
  verify(event: NostrEvent, raw: string = JSON.stringify(event)): Promise<VerifyResult> {
    if (this.closed) return Promise.reject(new KithError('error', 'verifier is closed'))
    if (this.workerCount === 0) return Promise.resolve(verifyWithWasm(event))
    return new Promise((resolve, reject) => {
      this.queue.push({ event, raw, resolve, reject })
      if (!this.scheduled) {
        this.scheduled = true
        setImmediate(() => this.flush())
      }
    })
  }

  private flush(): void {
    this.scheduled = false
    const queue = this.queue
    this.queue = []
    if (queue.length === 0) return
    if (this.slots.length === 0) {
      const error = new KithError('error', 'no verify worker is running')
      for (const p of queue) p.reject(error)
      return
    }
    // Split into one chunk per worker when there is enough work; small batches go to the least
    // loaded worker so a single event is not delayed by another worker's backlog.
    const chunks = queue.length >= 16 ? this.slots.length : 1
    const per = Math.ceil(queue.length / chunks)
    for (let i = 0; i < queue.length; i += per) {
      const part = queue.slice(i, i + per)
      const slot = this.slots.reduce((a, b) => (b.load < a.load ? b : a))
      const batch = this.nextBatch++
      slot.inFlight.set(batch, part)
      slot.load += part.length
      slot.worker.postMessage({ batch, events: part.map((p) => p.raw) })
    }
  }

  private spawn(): Promise<void> {
    const worker = new Worker(new URL('./verify-worker.js', import.meta.url), {
      resourceLimits: { maxYoungGenerationSizeMb: 4 },
    })
    const slot: Slot = { worker, inFlight: new Map(), load: 0 }
    this.slots.push(slot)
    return new Promise((ready, failed) => {
      worker.on('message', (msg: { ready?: true; batch?: number; results?: VerifyResult[] }) => {
        if (msg.ready) return ready()
        const part = msg.batch === undefined ? undefined : slot.inFlight.get(msg.batch)
        if (part === undefined || msg.results === undefined) return
        slot.inFlight.delete(msg.batch!)
        slot.load -= part.length
        part.forEach((p, i) => p.resolve(msg.results![i] ?? 'bad-sig'))
      })
      worker.on('error', (err) => failed(err))
      worker.on('exit', (code) => {
        // Every request the dead worker held is rejected, never left hanging.
        const error = new KithError('error', `verify worker exited (${code})`)
        for (const part of slot.inFlight.values()) for (const p of part) p.reject(error)
        slot.inFlight.clear()
        const at = this.slots.indexOf(slot)
        if (at >= 0) this.slots.splice(at, 1)
        if (!this.closed) {
          this.spawn().catch((e: unknown) => {
            // Without workers the hub cannot verify; fail loudly rather than accept unverified.
            process.emitWarning(`kith: cannot respawn verify worker: ${String(e)}`)
          })
        }
      })
    })
  }

  async close(): Promise<void> {
    this.closed = true
    await Promise.all(this.slots.map((s) => s.worker.terminate()))
  }
}

/** One worker per core: the main thread mostly waits on sockets and sqlite. */
export function defaultWorkerCount(): number {
  return Math.max(1, availableParallelism())
}
