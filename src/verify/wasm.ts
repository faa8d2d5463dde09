import { initNostrWasm } from 'nostr-wasm'
import { setNostrWasm, verifyEvent } from 'nostr-tools/wasm'
import { classifyVerifyFailure, type NostrEvent } from '../events/event.js'
import type { VerifyResult } from './result.js'

export type { VerifyResult } from './result.js'

let ready: Promise<void> | undefined

/** Loads libsecp256k1 (wasm) once per thread; about 5x the pure-JS verify rate. */
export function loadWasmVerifier(): Promise<void> {
  ready ??= initNostrWasm().then(setNostrWasm)
  return ready
}

/** Verifies id and signature with the wasm backend; call loadWasmVerifier() first. */
export function verifyWithWasm(event: NostrEvent): VerifyResult {
  // nostr-tools/wasm marks the object it verifies; give it a copy so callers' objects stay clean.
  if (verifyEvent({ ...event })) return 'ok'
  return classifyVerifyFailure(event)
}
