import { beforeAll, describe, expect, it } from 'vitest'
import { loadWasmVerifier, verifyWithWasm } from '../../src/verify/wasm.js'
import { loadNativeVerifier } from '../../src/verify/native.js'
import { vectors } from './vectors.js'

const native = loadNativeVerifier()

describe('event verification: native libsecp256k1 and wasm agree on every vector', () => {
  beforeAll(async () => {
    await loadWasmVerifier()
  })

  it('wasm gives the expected answer on every vector', () => {
    for (const v of vectors())
      expect({ v: v.name, got: verifyWithWasm(v.event) }).toEqual({ v: v.name, got: v.expect })
  })

  // .ci/run installs libsecp256k1-1, so CI runs both paths; elsewhere the native one may be absent.
  it.skipIf(native === undefined)('native gives the same answer on every vector', () => {
    for (const v of vectors()) {
      expect({ v: v.name, got: native!.verify(v.event) }).toEqual({ v: v.name, got: v.expect })
    }
  })

  it('answers undefined, not an error, where the library is missing', () => {
    expect(loadNativeVerifier({ libraries: ['/nonexistent/libsecp256k1.so'] })).toBeUndefined()
  })
})
