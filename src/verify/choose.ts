import { KithError } from '../errors.js'
import { loadNativeVerifier, type NativeVerifier } from './native.js'

/** What `KITH_VERIFY` may ask for; `auto` (the default) takes native where the library is. */
export type VerifierChoice = 'auto' | 'native' | 'wasm'

export type ChosenVerifier =
  { kind: 'native'; native: NativeVerifier } | { kind: 'wasm'; reason: string }

/**
 * Picks the verifier for this process from `KITH_VERIFY` (auto, native or wasm). `native`
 * without a usable libsecp256k1 is an error, not a silent fallback: whoever asked for it wants
 * to know.
 */
export function chooseVerifier(
  choice: string | undefined = process.env.KITH_VERIFY,
  load: () => NativeVerifier | undefined = loadNativeVerifier,
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
