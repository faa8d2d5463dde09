import { parentPort } from 'node:worker_threads'
import { nip44DecryptNative } from './nip44-native.js'

/**
 * Decrypts sealed events' content (NIP-44 v2 under their epoch keys) off the node's main thread
 * for `OpenAhead` (e2e-open-ahead.ts). Pure decryption only: what the plaintext means, and
 * whether it matches the event that carries it, is decided on the main thread by `openSealed`.
 * The keys come in the job, in memory; nothing here logs or prints anything.
 */
export interface OpenJob {
  job: number
  /** The distinct epoch keys of this job. */
  keys: Uint8Array[]
  /** Each event's content, and the index in `keys` of the key that opens it. */
  payloads: string[]
  keyIndex: number[]
}

/** Per payload, the plaintext, or the decryption's error message (it did not authenticate). */
export type OpenResult = string | { error: string }

export interface OpenAnswer {
  job: number
  results: OpenResult[]
}

if (parentPort === null) throw new Error('src/node/e2e-open-worker.ts must run as a worker thread')
const port = parentPort
port.on('message', (msg: OpenJob) => {
  const results = msg.payloads.map((payload, i): OpenResult => {
    try {
      return nip44DecryptNative(payload, msg.keys[msg.keyIndex[i]!]!)
    } catch (err) {
      // Not a failure of the worker: the main thread refuses the event as `tampered`, as inline.
      return { error: err instanceof Error ? err.message : String(err) }
    }
  })
  const answer: OpenAnswer = { job: msg.job, results }
  port.postMessage(answer)
})
