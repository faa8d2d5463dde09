import { parentPort, workerData } from 'node:worker_threads'
import type { NostrEvent } from '../events/event.js'
import type { VerifyResult } from './result.js'
import { loadWasmVerifier, verifyWithWasm } from './wasm.js'

/** Verifies batches of events off the hub's main thread. */
interface Batch {
  batch: number
  /** Canonical JSON of each event, already shape-checked by the main thread. */
  events: string[]
}

if (parentPort === null) throw new Error('src/verify/worker.ts must run as a worker thread')
const port = parentPort
const backend = (workerData as { backend?: 'native' | 'wasm' } | null)?.backend ?? 'wasm'
let check: (event: NostrEvent) => VerifyResult = verifyWithWasm
// koffi is loaded only in a worker that verifies natively.
const native = backend === 'native' ? (await import('./native.js')).loadNativeVerifier() : undefined
if (native === undefined) await loadWasmVerifier()
else check = (event) => native.verify(event)
port.on('message', (msg: Batch) => {
  port.postMessage({
    batch: msg.batch,
    results: msg.events.map((raw) => check(JSON.parse(raw) as NostrEvent)),
  })
})
port.postMessage({ ready: true })
