import { createHash } from 'node:crypto'
import koffi, { type LibraryHandle } from 'koffi'
import type { NostrEvent } from '../events/event.js'
import type { VerifyResult } from './result.js'

/**
 * Event verification with the system's libsecp256k1 (its schnorrsig module), called through
 * koffi: the id is hashed with node:crypto and the BIP-340 signature checked natively, about five
 * times the wasm rate per core. Optional: `loadNativeVerifier` answers undefined where the
 * library (or koffi) is missing, and the hub keeps the wasm verifier. Both give the same answers
 * on the same vectors (test/verify).
 */
export interface NativeVerifier {
  /** Where the library was found, for the one log line that says which verifier runs. */
  readonly library: string
  verify(event: NostrEvent): VerifyResult
}

/** Where Debian (`apt-get install libsecp256k1-1`), Homebrew and source installs put it. */
const candidates = [
  'libsecp256k1.so.1',
  'libsecp256k1.so.2',
  'libsecp256k1.so',
  '/opt/homebrew/lib/libsecp256k1.dylib',
  '/usr/local/lib/libsecp256k1.dylib',
  'libsecp256k1.dylib',
]

/** SECP256K1_CONTEXT_VERIFY: deprecated in 0.2 (where any flags verify) but needed before it. */
const contextVerify = 0x0101
/** Parsed x-only keys kept per verifier: members' keys repeat, parsing costs a square root. */
const keyCacheSize = 4096

let loaded: NativeVerifier | null | undefined

/** The native verifier, or undefined when this machine has no usable libsecp256k1. */
export function loadNativeVerifier(
  opts: { libraries?: readonly string[] } = {},
): NativeVerifier | undefined {
  if (opts.libraries === undefined && loaded !== undefined) return loaded ?? undefined
  const found = tryLoad(opts.libraries ?? candidates)
  if (opts.libraries === undefined) loaded = found ?? null
  return found
}

function tryLoad(libraries: readonly string[]): NativeVerifier | undefined {
  for (const name of libraries) {
    let lib: LibraryHandle
    try {
      lib = koffi.load(name)
    } catch {
      // Not at this path: try the next one.
      continue
    }
    try {
      return makeVerifier(lib, name)
    } catch {
      // Present but without the schnorrsig module (or another ABI): not usable.
      lib.unload()
    }
  }
  return undefined
}

function makeVerifier(lib: LibraryHandle, library: string): NativeVerifier {
  const contextCreate = lib.func('void *secp256k1_context_create(unsigned int flags)')
  const parseXonly = lib.func(
    'int secp256k1_xonly_pubkey_parse(void *ctx, _Out_ uint8_t *pubkey, const uint8_t *input32)',
  )
  const schnorrVerify = lib.func(
    'int secp256k1_schnorrsig_verify(void *ctx, const uint8_t *sig64, const uint8_t *msg, size_t msglen, const uint8_t *pubkey)',
  )
  const ctx: unknown = contextCreate(contextVerify)
  if (ctx === null) throw new Error('secp256k1_context_create failed')
  const keys = new Map<string, Buffer | null>()
  const parsedKey = (pubkey: string): Buffer | null => {
    let key = keys.get(pubkey)
    if (key === undefined) {
      const out = Buffer.alloc(64)
      key = parseXonly(ctx, out, Buffer.from(pubkey, 'hex')) === 1 ? out : null
      if (keys.size >= keyCacheSize) keys.delete(keys.keys().next().value!)
      keys.set(pubkey, key)
    }
    return key
  }
  return {
    library,
    verify(event: NostrEvent): VerifyResult {
      const id = createHash('sha256')
        .update(
          JSON.stringify([
            0,
            event.pubkey,
            event.created_at,
            event.kind,
            event.tags,
            event.content,
          ]),
        )
        .digest()
      if (id.toString('hex') !== event.id) return 'bad-id'
      const key = parsedKey(event.pubkey)
      if (key === null) return 'bad-sig'
      return schnorrVerify(ctx, Buffer.from(event.sig, 'hex'), id, 32, key) === 1 ? 'ok' : 'bad-sig'
    },
  }
}
