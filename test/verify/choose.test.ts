import { describe, expect, it } from 'vitest'
import { chooseVerifier, pickVerifier } from '../../src/verify/choose.js'
import { loadNativeVerifier } from '../../src/verify/native.js'

const native = loadNativeVerifier()
const missing = () => undefined

describe('choosing the verifier (KITH_VERIFY)', () => {
  it('KITH_VERIFY=wasm forces wasm even where libsecp256k1 is present', async () => {
    expect(await pickVerifier('wasm')).toEqual({ kind: 'wasm', reason: 'KITH_VERIFY=wasm' })
  })

  it('auto falls back to wasm where the library is missing', () => {
    expect(chooseVerifier(undefined, missing)).toEqual({
      kind: 'wasm',
      reason: 'no libsecp256k1 found',
    })
    expect(chooseVerifier('auto', missing).kind).toBe('wasm')
  })

  it('native without the library, or an unknown value, is a config error', () => {
    expect(() => chooseVerifier('native', missing)).toThrow(/apt-get install libsecp256k1-1/)
    expect(() => chooseVerifier('fast', loadNativeVerifier)).toThrow(/must be auto, native or wasm/)
    let caught: unknown
    try {
      chooseVerifier('fast', loadNativeVerifier)
    } catch (err) {
      caught = err
    }
    expect(caught).toMatchObject({ code: 'config' })
  })

  it.skipIf(native === undefined)('auto and native take libsecp256k1 where it is', async () => {
    expect((await pickVerifier('auto')).kind).toBe('native')
    expect((await pickVerifier('native')).kind).toBe('native')
  })
})
