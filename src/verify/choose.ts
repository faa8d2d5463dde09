import { KithError } from '../errors.js'
import type { NativeVerifier } from './native.js'

/** What `KITH_VERIFY` may ask for; `auto` (the default) takes native where the library is. */
export type VerifierChoice = 'auto' | 'native' | 'wasm'

export type ChosenVerifier =
  { kind: 'native'; native: NativeVerifier } | { kind: 'wasm'; reason: string }

/**
 * Picks the verifier from `choice` (KITH_VERIFY: auto, native or wasm) and `load`, which finds
 * the native library or answers undefined. `native` without a usable libsecp256k1 is an error,
 * not a silent fallback: whoever asked for it wants to know.
 */
export function chooseVerifier(
  choice: string | undefined,
  load: () => NativeVerifier | undefined,
): ChosenVerifier {
  const wanted = choice === undefined || choice === '' ? 'auto' : choice
  if (wanted === 'wasm') return { kind: 'wasm', reason: 'KITH_VERIFY=wasm' }
  if (wanted !== 'auto' && wanted !== 'native')
    throw new KithError('config', `KITH_VERIFY must be auto, native or wasm, not ${wanted}`)
  const native = load()
  if (native !== undefined) return { kind: 'native', native }
  if (wanted === 'native')
    throw new KithError(
      'config',
      'KITH_VERIFY=native but no libsecp256k1 with the schnorrsig module was found ' +
        '(apt-get install libsecp256k1-1, brew install secp256k1)',
    )
  return { kind: 'wasm', reason: 'no libsecp256k1 found' }
}

/**
 * The verifier for this process (KITH_VERIFY by default). koffi is imported only here and only
 * when native may be used: where it has no prebuilt binary for the platform, or KITH_VERIFY=wasm,
 * the process runs on wasm without loading it.
 */
export async function pickVerifier(
  choice: string | undefined = process.env.KITH_VERIFY,
): Promise<ChosenVerifier> {
  if (choice === 'wasm') return chooseVerifier(choice, () => undefined)
  let load: () => NativeVerifier | undefined
  try {
    load = (await import('./native.js')).loadNativeVerifier
  } catch (err) {
    // koffi cannot load here: the same as a missing library (an error if native was asked for).
    if (choice === 'native')
      throw new KithError('config', `KITH_VERIFY=native but koffi cannot load: ${String(err)}`)
    return { kind: 'wasm', reason: 'koffi cannot load' }
  }
  return chooseVerifier(choice, load)
}
