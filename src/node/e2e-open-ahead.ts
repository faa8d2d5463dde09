import { Worker } from 'node:worker_threads'
import type { Epoch } from '../events/e2e-epoch.js'
import { sealedEpochId, sealedKinds } from '../events/e2e-seal.js'
import { isHex64, type NostrEvent } from '../events/event.js'
import type { OpenAnswer, OpenJob, OpenResult } from './e2e-open-worker.js'
import { nip44DecryptNative } from './nip44-native.js'

/** NIP-44 v2 decryption as `openSealed` takes it. */
export type Decrypt = (payload: string, conversationKey: Uint8Array) => string

/**
 * Fewer sealed events than this in a batch are decrypted inline: a live batch is a few events,
 * and a worker's round trip (and its start after an idle spell, ~40 ms) would only delay them.
 * A catch-up page is 2,000.
 */
export const defaultOpenAheadMin = 200
/** A worker with nothing to do for this long exits (it holds ~20 MB); the next batch starts one. */
const defaultIdleMs = 30_000
/** Content per job posted to the worker: bounds both heaps whatever the events' size. */
const maxJobBytes = 1024 * 1024

interface Ahead {
  payload: string
  key: Uint8Array
  result: OpenResult
}

/**
 * What the worker decrypted for one batch, by event id, with the payload and key it used. `for`
 * gives `openSealed` a decryption that answers from it only for that very payload under that
 * very key, and decrypts inline otherwise (an event whose key came after the batch was started,
 * one the worker was not given): `openSealed` is the same pure function either way, so every
 * refusal (`malformed`, `no-key`, `tampered`, `misbound`) and every opened event is as inline.
 */
export class Decrypted {
  constructor(private readonly byId: ReadonlyMap<string, Ahead>) {}

  /** How many events were decrypted ahead. */
  get size(): number {
    return this.byId.size
  }

  for(event: NostrEvent): Decrypt {
    const ahead = this.byId.get(event.id)
    if (ahead === undefined) return nip44DecryptNative
    return (payload, key) => {
      if (ahead.payload !== payload || !sameBytes(ahead.key, key))
        return nip44DecryptNative(payload, key)
      if (typeof ahead.result === 'string') return ahead.result
      throw new Error(ahead.result.error)
    }
  }
}

export interface OpenAheadOptions {
  /** Sealed events with known keys a batch needs before a worker is used (defaultOpenAheadMin). */
  minEvents?: number
  idleMs?: number
  log: (line: string) => void
}

/**
 * Decrypts a catch-up's sealed events in a worker thread while the main thread verifies their
 * signatures (kith-e2e/1 opening costs ~20 µs an event, verification ~50–100 µs; the second core
 * is otherwise nearly idle during a catch-up). Intake starts it on a batch as it arrives, with
 * the keys held at that moment, and hands the result to `E2eKeys.open`, which opens in order on
 * the main thread as before. Never rejects: a failed worker means inline decryption.
 */
export class OpenAhead {
  private worker: Worker | undefined
  private readonly jobs = new Map<number, (results: OpenResult[] | undefined) => void>()
  private nextJob = 1
  private idleTimer: NodeJS.Timeout | undefined
  private closed = false
  private readonly minEvents: number
  private readonly idleMs: number

  constructor(private readonly opts: OpenAheadOptions) {
    this.minEvents = opts.minEvents ?? defaultOpenAheadMin
    this.idleMs = opts.idleMs ?? defaultIdleMs
  }

  /** Workers alive now (0 or 1): for tests. */
  get running(): number {
    return this.worker === undefined ? 0 : 1
  }

  /**
   * Starts decrypting the sealed events of `events` whose key `keyOf` holds now. Undefined when
   * too few are sealed to be worth a worker, or the worker failed: `open` then decrypts inline.
   */
  async start(
    events: readonly NostrEvent[],
    keyOf: (epochId: string) => Epoch | undefined,
  ): Promise<Decrypted | undefined> {
    if (this.closed) return undefined
    const picked: { id: string; payload: string; key: Uint8Array }[] = []
    for (const e of events) {
      if (!sealedKinds.has(e.kind)) continue
      const epochId = sealedEpochId(e)
      if (epochId === undefined || !isHex64(epochId)) continue
      const epoch = keyOf(epochId)
      if (epoch !== undefined) picked.push({ id: e.id, payload: e.content, key: epoch.key })
    }
    if (picked.length < this.minEvents) return undefined
    const parts: (typeof picked)[] = [[]]
    let bytes = 0
    for (const p of picked) {
      if (bytes + p.payload.length > maxJobBytes && parts.at(-1)!.length > 0) {
        parts.push([])
        bytes = 0
      }
      parts.at(-1)!.push(p)
      bytes += p.payload.length
    }
    const answers = await Promise.all(parts.map((part) => this.post(part)))
    const byId = new Map<string, Ahead>()
    parts.forEach((part, i) => {
      const results = answers[i]
      if (results === undefined) return
      part.forEach((p, j) =>
        byId.set(p.id, { payload: p.payload, key: p.key, result: results[j]! }),
      )
    })
    return byId.size === 0 ? undefined : new Decrypted(byId)
  }

  private post(
    part: readonly { payload: string; key: Uint8Array }[],
  ): Promise<OpenResult[] | undefined> {
    const worker = this.ensureWorker()
    if (worker === undefined) return Promise.resolve(undefined)
    const keys: Uint8Array[] = []
    const index = new Map<Uint8Array, number>()
    const keyIndex = part.map((p) => {
      let i = index.get(p.key)
      if (i === undefined) {
        i = keys.push(p.key) - 1
        index.set(p.key, i)
      }
      return i
    })
    const job: OpenJob = {
      job: this.nextJob++,
      keys,
      payloads: part.map((p) => p.payload),
      keyIndex,
    }
    return new Promise((resolve) => {
      this.jobs.set(job.job, resolve)
      clearTimeout(this.idleTimer)
      worker.ref()
      worker.postMessage(job)
    })
  }

  private ensureWorker(): Worker | undefined {
    if (this.worker !== undefined) return this.worker
    let worker: Worker
    try {
      worker = new Worker(new URL('./e2e-open-worker.js', import.meta.url), {
        // A job is at most maxJobBytes of content: a small heap is plenty.
        resourceLimits: { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 32 },
      })
    } catch (err) {
      this.opts.log(`decrypting inline: no worker (${String(err)})`)
      return undefined
    }
    worker.on('message', (answer: OpenAnswer) => {
      const resolve = this.jobs.get(answer.job)
      this.jobs.delete(answer.job)
      resolve?.(answer.results)
      if (this.jobs.size === 0) this.idle(worker)
    })
    const fail = (why: string) => {
      if (this.worker !== worker) return
      this.worker = undefined
      clearTimeout(this.idleTimer)
      if (!this.closed) this.opts.log(`decrypting inline: the worker ${why}`)
      for (const resolve of this.jobs.values()) resolve(undefined)
      this.jobs.clear()
    }
    worker.on('error', (err) => fail(`failed (${String(err)})`))
    worker.on('messageerror', (err) => {
      fail(`sent what could not be read (${String(err)})`)
      void worker.terminate()
    })
    worker.on('exit', (code) => fail(`exited (${code})`))
    this.worker = worker
    return worker
  }

  /** No job in flight: the worker holds the process open no longer, and exits after idleMs. */
  private idle(worker: Worker): void {
    worker.unref()
    clearTimeout(this.idleTimer)
    this.idleTimer = setTimeout(() => {
      if (this.worker !== worker || this.jobs.size > 0) return
      this.worker = undefined
      void worker.terminate()
    }, this.idleMs)
    this.idleTimer.unref()
  }

  async close(): Promise<void> {
    this.closed = true
    clearTimeout(this.idleTimer)
    const worker = this.worker
    this.worker = undefined
    for (const resolve of this.jobs.values()) resolve(undefined)
    this.jobs.clear()
    if (worker !== undefined) await worker.terminate()
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}
