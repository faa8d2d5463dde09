import { describe, expect, it } from 'vitest'
import { chooseVerifier, pickVerifier } from '../../src/verify/choose.js'
import { loadNativeVerifier } from '../../src/verify/native.js'
import { vectors } from './vectors.js'
// Worker threads need the compiled worker file, so the pool is the built one (npm test builds).
const distPool = '../../dist/verify/pool.js'
const { VerifyPool } = (await import(distPool)) as typeof import('../../src/verify/pool.js')

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

describe.skipIf(native === undefined)('the pool with the native verifier', () => {
  it('verifies inline (no worker) with the same answers as the wasm workers', async () => {
    const inline = await VerifyPool.create(2, {
      helpInline: true,
      verifier: await pickVerifier('native'),
    })
    const workers = await VerifyPool.create(2, {
      helpInline: true,
      verifier: await pickVerifier('wasm'),
    })
    try {
      expect(inline.kind).toBe('native')
      expect(inline.description).toMatch(/^native libsecp256k1 .*inline on the main thread$/)
      expect(workers.description).toMatch(/^wasm \(KITH_VERIFY=wasm\) in up to 2 worker/)
      const vs = vectors()
      const got = await Promise.all(vs.map((v) => inline.verify(v.event)))
      const viaWorkers = await Promise.all(vs.map((v) => workers.verify(v.event)))
      expect(got).toEqual(vs.map((v) => v.expect))
      expect(viaWorkers).toEqual(got)
      expect(inline.running).toBe(0)
      expect(inline.verified).toBe(vs.length)
    } finally {
      await inline.close()
      await workers.close()
    }
  })

  it('checks 64 inline per turn of the event loop, the rest in later turns, in order', async () => {
    const pool = await VerifyPool.create(0, { verifier: await pickVerifier('native') })
    try {
      const vs = Array.from({ length: 10 }, () => vectors()).flat()
      const pending = vs.map((v) => pool.verify(v.event))
      // 64 were checked in this turn; the rest wait so sockets and timers are served between.
      expect(pool.verified).toBe(64)
      expect(pool.inFlight).toBe(vs.length - 64)
      expect(await Promise.all(pending)).toEqual(vs.map((v) => v.expect))
      expect(pool.verified).toBe(vs.length)
      expect(pool.inFlight).toBe(0)
    } finally {
      await pool.close()
    }
  })

  it('can run native in worker threads too, with the same answers', async () => {
    const pool = await VerifyPool.create(1, {
      nativeInWorkers: true,
      verifier: await pickVerifier('native'),
    })
    try {
      const vs = vectors()
      expect(await Promise.all(vs.map((v) => pool.verify(v.event)))).toEqual(
        vs.map((v) => v.expect),
      )
      expect(pool.running).toBe(1)
    } finally {
      await pool.close()
    }
  })
})
