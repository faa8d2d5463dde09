import { initNostrWasm } from 'nostr-wasm'
import { setNostrWasm, verifyEvent } from 'nostr-tools/wasm'
import { classifyVerifyFailure, type NostrEvent } from './event.js'

/** Outcome of verifying one event: ok, or which check failed. */
export type VerifyResult = 'ok' | 'bad-id' | 'bad-sig'

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
