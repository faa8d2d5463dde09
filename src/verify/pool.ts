import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import { KithError } from '../errors.js'
import type { NostrEvent } from '../events/event.js'
import { pickVerifier, type ChosenVerifier } from './choose.js'
import type { NativeVerifier } from './native.js'
import type { VerifyResult } from './result.js'
import { loadWasmVerifier, verifyWithWasm } from './wasm.js'

/**
 * Whose work it is. Members' events go first; work for connections that have not authenticated
 * (AUTH events, grants published before AUTH, pairing messages) waits behind it and only a few of
 * those batches are with the workers at a time, so a stranger's flood cannot delay members.
 */
export type VerifyPriority = 'member' | 'stranger'

interface Pending {
  event: NostrEvent
  /** The event as canonical JSON: strings cross to a worker far cheaper than objects. */
  raw: string
  resolve: (r: VerifyResult) => void
  reject: (e: Error) => void
}

interface Slot {
  worker: Worker
  ready: boolean
  /** Set when the pool ends the worker on purpose (idle or closing): its exit is no failure. */
  retiring: boolean
  inFlight: Map<number, { part: Pending[]; stranger: boolean }>
  load: number
  idleTimer: NodeJS.Timeout | undefined
}

export interface VerifyPoolOptions {
  /** A worker with nothing to do for this long exits; the next event starts one again. */
  idleMs?: number
  /**
   * Let the main thread check members' events the workers have no room for (more than
   * `workerDepth` each). On two cores one worker plus the main thread verify as fast as two
   * workers, and a worker costs ~20 MB; see docs/performance.md.
   */
  helpInline?: boolean
  /** Stranger events with the workers at once; the rest wait behind members' work. */
  strangerInFlight?: number
  /** Which verifier runs; by default `pickVerifier()` (KITH_VERIFY, else native if present). */
  verifier?: ChosenVerifier
  /**
   * With the native verifier, verify on the main thread only (no worker), as before issue 34.
   * By default native runs beside the main thread when there is a backlog (`create`).
   */
  nativeInline?: boolean
}

/** Idle workers cost ~20 MB each; starting one again costs ~40 ms once, after a quiet spell. */
export const defaultVerifyIdleMs = 30_000
/** ≈ 16 × 250 µs: the most a member's event can wait behind strangers' work on one worker. */
export const defaultStrangerInFlight = 16
/** Queued events per running worker before another is started (up to the pool's size). */
const backlogPerWorker = 16
/** Members' events a worker holds at once when the main thread helps: ~8 ms of work. */
const workerDepth = 32
/** Events the main thread checks per turn of the event loop (~2 ms), so I/O goes on between. */
const inlineChunk = 8
/**
 * Events checked inline (no workers) in one turn of the event loop, native and wasm: ~6 ms and
 * ~16 ms. More in the same turn (a node's catch-up page of 2,000 events) wait for the next
 * turns, so sockets and timers are served between; order is kept.
 */
const nativePerTurn = 64
/** Native checks inline in a turn while nothing waits (~0.5–0.8 ms); more go to the workers. */
const idleInlinePerTurn = 8
const wasmPerTurn = 16
/** Raw JSON per batch posted to a worker: bounds a worker's heap whatever the events' size. */
const maxBatchBytes = 1024 * 1024

/**
 * Signature verification, with the native libsecp256k1 (~60–100 µs an event) or wasm (~250 µs).
 *
 * Native, with one or more workers allowed: events that arrive when nothing else waits are
 * checked inline at once, up to `idleInlinePerTurn` a turn (a hand-off to a worker, serialize,
 * post, parse, post back, resolve, would cost a good part of the check and add its latency).
 * Under a backlog the workers take members' events in batches and the main thread checks what
 * they have no room for, so a busy hub verifies on two cores (issue 34: ingest +15–20% on 2
 * cores, docs/performance.md). Native with `nativeInline`, no workers or one core: inline only
 * (issue 18's measure on a busy machine: inline spent less CPU in all).
 *
 * Wasm runs off the main thread. Requests that arrive in the same turn of the event loop are
 * batched (one postMessage per worker, not per event) and spread over the workers by load.
 * Workers start on demand, one more whenever a backlog builds, up to `size`, and exit after
 * `idleMs` without work, so an idle node holds none. With `workers: 0` it verifies inline,
 * for embedded and test use.
 */
export class VerifyPool {
  private readonly slots: Slot[] = []
  private members: Pending[] = []
  private strangers: Pending[] = []
  private strangersOut = 0
  private scheduled = false
  private nextBatch = 1
  private closed = false
  private spawnFailure: Error | undefined
  private done = 0
  private readonly idleMs: number
  private readonly strangerCap: number
  private readonly helpInline: boolean
  /** Members' events the main thread checks itself, a chunk per turn. */
  private inline: Pending[] = []
  private inlineScheduled = false
  /** Inline checks in this turn of the event loop (no-worker mode); reset by setImmediate. */
  private turnChecks = 0
  /** Set when the native verifier runs: the main thread uses it (and workers, if any, too). */
  private readonly native: NativeVerifier | undefined
  /** Checks one event on this thread with whichever verifier runs. */
  private readonly check: (event: NostrEvent) => VerifyResult
  /** One line for the start-up log: which verifier runs, and where. */
  readonly description: string

  private constructor(
    private readonly workerCount: number,
    opts: VerifyPoolOptions,
    chosen: ChosenVerifier,
  ) {
    this.idleMs = opts.idleMs ?? defaultVerifyIdleMs
    this.strangerCap = opts.strangerInFlight ?? defaultStrangerInFlight
    this.helpInline = opts.helpInline ?? false
    if (chosen.kind === 'native') {
      const native = chosen.native
      this.native = native
      this.check = (event) => native.verify(event)
      this.description =
        workerCount === 0
          ? `native libsecp256k1 (${native.library}), inline on the main thread`
          : `native libsecp256k1 (${native.library}), inline when idle, with up to ${workerCount} worker thread(s) under load`
    } else {
      this.native = undefined
      this.check = verifyWithWasm
      this.description =
        workerCount === 0
          ? `wasm (${chosen.reason}), inline on the main thread`
          : `wasm (${chosen.reason}) in up to ${workerCount} worker thread(s)`
    }
  }

  /** `workers: 0` (or native with `nativeInline`) checks every event on the main thread. */
  static async create(
    workers = defaultWorkerCount(),
    opts: VerifyPoolOptions = {},
  ): Promise<VerifyPool> {
    const chosen = opts.verifier ?? (await pickVerifier())
    // On one core a worker would only take turns with the main thread.
    const inline =
      chosen.kind === 'native' && (opts.nativeInline === true || availableParallelism() < 2)
    const pool = new VerifyPool(inline ? 0 : workers, opts, chosen)
    if (chosen.kind === 'wasm' && (workers === 0 || opts.helpInline === true))
      await loadWasmVerifier()
    return pool
  }

  private get perTurn(): number {
    return this.native === undefined ? wasmPerTurn : nativePerTurn
  }

  /** Which verifier runs: 'native' or 'wasm'. */
  get kind(): 'native' | 'wasm' {
    return this.native === undefined ? 'wasm' : 'native'
  }

  get size(): number {
    return this.workerCount
  }

  /** Workers alive right now (starting or ready). */
  get running(): number {
    return this.slots.length
  }

  /** Signatures checked since the pool was made (a count for tests and operators). */
  get verified(): number {
    return this.done
  }

  /** Events queued or being verified right now. */
  get inFlight(): number {
    let n = this.members.length + this.strangers.length + this.inline.length
    for (const slot of this.slots) n += slot.load
    return n
  }

  /** Verifies `event`; `raw` must be JSON.stringify(event), which the caller has already made. */
  verify(
    event: NostrEvent,
    raw: string = JSON.stringify(event),
    priority: VerifyPriority = 'member',
  ): Promise<VerifyResult> {
    if (this.closed) return Promise.reject(new KithError('error', 'verifier is closed'))
    if (this.workerCount === 0 || (this.native !== undefined && priority === 'stranger')) {
      // Inline: strangers' events are checked at once too; at native speed that is ~100 µs each
      // and admission (hub/admission.ts) already bounds how many strangers may send. Native
      // workers are for members' ingest: a flood of AUTHs (2,000 devices reconnecting) starts
      // none, so it costs no worker's memory.
      if (this.inline.length === 0 && this.turnChecks < this.perTurn) return this.checkNow(event)
      this.countTurn()
      return new Promise((resolve, reject) => {
        this.inline.push({ event, raw, resolve, reject })
        this.scheduleInline()
      })
    }
    if (this.native !== undefined && this.inFlight === 0 && this.turnChecks < idleInlinePerTurn) {
      // Nothing waits: a hand-off would only add latency. A few a turn, so a small burst stays
      // together (one commit, one fan-out: a node's notifier sums five mentions sent at once)
      // and a large one goes to the workers.
      return this.checkNow(event)
    }
    return new Promise((resolve, reject) => {
      const queue = priority === 'member' ? this.members : this.strangers
      queue.push({ event, raw, resolve, reject })
      this.schedule()
    })
  }

  /** Counts a check in this turn of the event loop (the count starts again next turn). */
  private countTurn(): void {
    if (this.turnChecks === 0) setImmediate(() => (this.turnChecks = 0))
    this.turnChecks++
  }

  /** Checks `event` here, now. */
  private checkNow(event: NostrEvent): Promise<VerifyResult> {
    this.countTurn()
    this.done++
    return Promise.resolve(this.check(event))
  }

  private schedule(): void {
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(() => this.flush())
  }

  private flush(): void {
    this.scheduled = false
    if (this.closed) return
    const waiting = this.members.length + this.strangers.length
    if (waiting === 0) return
    if (this.slots.length === 0 && this.spawnFailure !== undefined) {
      // The last start failed: tell whoever waits; the next request tries once more.
      this.failQueued()
      this.spawnFailure = undefined
      return
    }
    this.grow(waiting)
    const ready = this.slots.filter((s) => s.ready)
    // None ready: a worker is starting and flushes when it is.
    if (ready.length === 0) return
    let members = this.members
    this.members = []
    if (this.helpInline && this.slots.length >= this.workerCount) {
      // The workers are all running: what they have no room for, the main thread checks.
      let room = ready.length * workerDepth
      for (const slot of ready) room -= slot.load
      if (members.length > Math.max(0, room)) {
        this.inline.push(...members.slice(Math.max(0, room)))
        members = members.slice(0, Math.max(0, room))
        this.scheduleInline()
      }
    }
    this.post(ready, members, false)
    const room = Math.max(0, this.strangerCap - this.strangersOut)
    if (room > 0 && this.strangers.length > 0) {
      const strangers = this.strangers.splice(0, room)
      this.strangersOut += strangers.length
      this.post(ready, strangers, true)
    }
  }

  /** Starts a worker when none runs, and another while the backlog outgrows those running. */
  private grow(waiting: number): void {
    let load = waiting
    for (const slot of this.slots) load += slot.load
    const wanted = Math.min(this.workerCount, Math.max(1, Math.ceil(load / backlogPerWorker)))
    while (this.slots.length < wanted) this.spawn()
  }

  private scheduleInline(): void {
    if (this.inlineScheduled) return
    this.inlineScheduled = true
    const ready = this.native === undefined ? loadWasmVerifier() : Promise.resolve()
    ready.then(
      () => setImmediate(() => this.drainInline()),
      (err: unknown) => {
        // Without wasm here the workers take it all.
        this.inlineScheduled = false
        process.emitWarning(`kith: cannot verify on the main thread: ${String(err)}`)
        this.members.unshift(...this.inline)
        this.inline = []
        this.schedule()
      },
    )
  }

  private drainInline(): void {
    this.inlineScheduled = false
    if (this.closed) return
    const chunk = this.inline.splice(0, this.workerCount === 0 ? this.perTurn : inlineChunk)
    for (const p of chunk) {
      this.done++
      p.resolve(this.check(p.event))
    }
    if (this.inline.length > 0) {
      this.inlineScheduled = true
      setImmediate(() => this.drainInline())
    }
  }

  private post(ready: Slot[], queue: Pending[], stranger: boolean): void {
    if (queue.length === 0) return
    // Split into one chunk per worker when there is enough work; small batches go to the least
    // loaded worker so a single event is not delayed by another worker's backlog. No batch
    // carries more than maxBatchBytes of JSON.
    const chunks = queue.length >= 16 ? ready.length : 1
    const per = Math.ceil(queue.length / chunks)
    for (let i = 0; i < queue.length;) {
      let end = i + 1
      let bytes = queue[i]!.raw.length
      while (
        end < queue.length &&
        end - i < per &&
        bytes + queue[end]!.raw.length <= maxBatchBytes
      ) {
        bytes += queue[end]!.raw.length
        end++
      }
      const part = queue.slice(i, end)
      i = end
      const slot = ready.reduce((a, b) => (b.load < a.load ? b : a))
      const batch = this.nextBatch++
      slot.inFlight.set(batch, { part, stranger })
      slot.load += part.length
      clearTimeout(slot.idleTimer)
      slot.idleTimer = undefined
      slot.worker.postMessage({ batch, events: part.map((p) => p.raw) })
    }
  }

  private failQueued(): void {
    const error = new KithError(
      'error',
      `cannot start a verify worker: ${String(this.spawnFailure?.message)}`,
    )
    for (const p of [...this.members, ...this.strangers]) p.reject(error)
    this.members = []
    this.strangers = []
  }

  private spawn(): void {
    const worker = new Worker(new URL('./worker.js', import.meta.url), {
      workerData: { backend: this.kind },
      // A batch is at most maxBatchBytes of JSON, so a small heap is plenty; each MB the heap
      // may grow is resident memory under load (docs/performance.md).
      resourceLimits: { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 32 },
    })
    const slot: Slot = {
      worker,
      ready: false,
      retiring: false,
      inFlight: new Map(),
      load: 0,
      idleTimer: undefined,
    }
    this.slots.push(slot)
    worker.on('message', (msg: { ready?: true; batch?: number; results?: VerifyResult[] }) => {
      if (msg.ready) {
        slot.ready = true
        this.spawnFailure = undefined
        this.idleLater(slot)
        this.schedule()
        return
      }
      const entry = msg.batch === undefined ? undefined : slot.inFlight.get(msg.batch)
      if (entry === undefined || msg.results === undefined) return
      slot.inFlight.delete(msg.batch!)
      slot.load -= entry.part.length
      this.done += entry.part.length
      if (entry.stranger) this.strangersOut -= entry.part.length
      entry.part.forEach((p, i) => p.resolve(msg.results![i] ?? 'bad-sig'))
      if (entry.stranger && this.strangers.length > 0) this.schedule()
      if (slot.load === 0) this.idleLater(slot)
    })
    worker.on('error', (err) => {
      if (!slot.ready) this.spawnFailure = err
    })
    worker.on('exit', (code) => {
      clearTimeout(slot.idleTimer)
      // Every request the dead worker held is rejected, never left hanging.
      const error = new KithError('error', `verify worker exited (${code})`)
      for (const entry of slot.inFlight.values()) {
        if (entry.stranger) this.strangersOut -= entry.part.length
        for (const p of entry.part) p.reject(error)
      }
      slot.inFlight.clear()
      const at = this.slots.indexOf(slot)
      if (at >= 0) this.slots.splice(at, 1)
      if (!slot.retiring && !slot.ready && this.spawnFailure !== undefined) {
        // It never started: do not retry in a loop; tell whoever waits.
        process.emitWarning(`kith: cannot start a verify worker: ${this.spawnFailure.message}`)
      }
      // Whatever still waits gets a worker (or, when none can start, its error).
      if (!this.closed) this.schedule()
    })
  }

  /** Retires `slot` after `idleMs` without work. */
  private idleLater(slot: Slot): void {
    clearTimeout(slot.idleTimer)
    slot.idleTimer = setTimeout(() => {
      if (slot.load > 0 || this.closed) return
      slot.retiring = true
      slot.worker.terminate().catch((err: unknown) => {
        // The worker is gone either way; nothing was in flight on it.
        process.emitWarning(`kith: stopping an idle verify worker: ${String(err)}`)
      })
    }, this.idleMs)
    slot.idleTimer.unref()
  }

  async close(): Promise<void> {
    this.closed = true
    const error = new KithError('error', 'verifier is closed')
    for (const p of [...this.members, ...this.strangers, ...this.inline]) p.reject(error)
    this.members = []
    this.strangers = []
    this.inline = []
    for (const slot of this.slots) {
      clearTimeout(slot.idleTimer)
      slot.retiring = true
    }
    await Promise.all(this.slots.map((s) => s.worker.terminate()))
  }
}

/**
 * One worker per core but one: the main thread, which mostly waits on sockets and sqlite, verifies
 * what the workers have no room for (helpInline), so the cores are used all the same with one
 * worker's memory less.
 */
export function defaultWorkerCount(): number {
  return Math.max(1, availableParallelism() - 1)
}
