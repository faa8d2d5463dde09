/** Outcome of verifying one event: ok, or which check failed. Shared by the wasm and native paths. */
export type VerifyResult = 'ok' | 'bad-id' | 'bad-sig'
