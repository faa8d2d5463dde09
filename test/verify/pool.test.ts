import { availableParallelism } from 'node:os'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { signEvent } from '../../src/events/event.js'
import { pickVerifier } from '../../src/verify/choose.js'
import { loadNativeVerifier } from '../../src/verify/native.js'
import { vectors } from './vectors.js'
// The worker file only exists compiled, so this test drives the built pool (npm test builds).
const distPool = '../../dist/verify/pool.js'
const { VerifyPool } = (await import(distPool)) as typeof import('../../src/verify/pool.js')

const native = loadNativeVerifier()
const sk = generateSecretKey()
// These cases are about worker threads, which only the wasm verifier uses.
const wasm = { kind: 'wasm', reason: 'test' } as const

describe('VerifyPool (worker threads)', () => {
  it('verifies batches across workers and reports which check failed', async () => {
    const pool = await VerifyPool.create(2, { verifier: wasm })
    try {
      const good = Array.from({ length: 50 }, (_, i) =>
        signEvent({ kind: 9, created_at: i, tags: [], content: `${i}` }, sk),
      )
      const badId = { ...good[0]!, content: 'tampered' }
      const badSig = { ...good[1]!, sig: good[2]!.sig }
      const results = await Promise.all([...good, badId, badSig].map((e) => pool.verify(e)))
      expect(results.slice(0, 50).every((r) => r === 'ok')).toBe(true)
      expect(results.slice(50)).toEqual(['bad-id', 'bad-sig'])
      expect(pool.inFlight).toBe(0)
    } finally {
      await pool.close()
    }
  })

  it('rejects what a dead worker held, then keeps serving with a new one', async () => {
    const pool = await VerifyPool.create(1, { verifier: wasm })
    try {
      const e = signEvent({ kind: 9, created_at: 1, tags: [], content: 'x' }, sk)
      // Workers start on demand: the first request starts one.
      expect(pool.running).toBe(0)
      expect(await pool.verify(e)).toBe('ok')
      expect(pool.running).toBe(1)
      const slots = (pool as unknown as { slots: { worker: { terminate(): Promise<number> } }[] })
        .slots
      // A batch big enough (~1 s of wasm work) that the worker is still at it when killed,
      // however loaded the machine.
      const many = Array.from({ length: 4000 }, (_, i) =>
        signEvent({ kind: 9, created_at: i, tags: [], content: `${i}` }, sk),
      )
      const pending = Promise.all(many.map((m) => pool.verify(m)))
      // Let the batch reach the worker, then kill it mid-flight.
      await new Promise((r) => setImmediate(r))
      await slots[0]!.worker.terminate()
      await expect(pending).rejects.toMatchObject({ code: 'error' })
      await expect.poll(() => slots.length).toBe(0)
      expect(await pool.verify(e)).toBe('ok')
      expect(pool.running).toBe(1)
    } finally {
      await pool.close()
    }
  })

  it('starts no worker until there is work, and lets an idle one exit', async () => {
    const pool = await VerifyPool.create(2, { idleMs: 1000, verifier: wasm })
    try {
      expect(pool.running).toBe(0)
      const events = Array.from({ length: 64 }, (_, i) =>
        signEvent({ kind: 9, created_at: i, tags: [], content: `${i}` }, sk),
      )
      const results = await Promise.all(events.map((e) => pool.verify(e)))
      expect(results.every((r) => r === 'ok')).toBe(true)
      // A backlog of 64 started the second worker too.
      expect(pool.running).toBe(2)
      expect(pool.verified).toBe(64)
      await expect.poll(() => pool.running, { timeout: 10_000 }).toBe(0)
      expect(await pool.verify(events[0]!)).toBe('ok')
    } finally {
      await pool.close()
    }
  })

  it('serves members first: strangers have a few checks with the workers at a time', async () => {
    const pool = await VerifyPool.create(1, { strangerInFlight: 4, verifier: wasm })
    try {
      const events = Array.from({ length: 40 }, (_, i) =>
        signEvent({ kind: 9, created_at: i, tags: [], content: `${i}` }, sk),
      )
      await pool.verify(events[0]!)
      const order: string[] = []
      const strangers = events
        .slice(0, 20)
        .map((e) => pool.verify(e, undefined, 'stranger').then(() => order.push('s')))
      const members = events
        .slice(20)
        .map((e) => pool.verify(e, undefined, 'member').then(() => order.push('m')))
      await Promise.all([...strangers, ...members])
      // Every member check finished after at most one batch of 4 strangers' checks.
      expect(order.lastIndexOf('m')).toBeLessThan(4 + 20)
      expect(order.filter((o) => o === 's')).toHaveLength(20)
    } finally {
      await pool.close()
    }
  })

  it('lets the main thread check what one worker has no room for, with the same answers', async () => {
    const pool = await VerifyPool.create(1, { helpInline: true, verifier: wasm })
    try {
      const good = Array.from({ length: 300 }, (_, i) =>
        signEvent({ kind: 9, created_at: i, tags: [], content: `${i}` }, sk),
      )
      const badId = { ...good[0]!, content: 'tampered' }
      const badSig = { ...good[1]!, sig: good[2]!.sig }
      const results = await Promise.all([...good, badId, badSig].map((e) => pool.verify(e)))
      expect(results.slice(0, 300).every((r) => r === 'ok')).toBe(true)
      expect(results.slice(300)).toEqual(['bad-id', 'bad-sig'])
      expect(pool.running).toBe(1)
      expect(pool.verified).toBe(302)
      expect(pool.inFlight).toBe(0)
    } finally {
      await pool.close()
    }
  })

  it('refuses work after close', async () => {
    const pool = await VerifyPool.create(1, { verifier: wasm })
    await pool.close()
    const e = signEvent({ kind: 9, created_at: 1, tags: [], content: 'x' }, sk)
    await expect(pool.verify(e)).rejects.toMatchObject({ code: 'error' })
  })
})

describe.skipIf(native === undefined)('the pool with the native verifier', () => {
  it('verifies inline (no worker) with the same answers as the wasm workers', async () => {
    const inline = await VerifyPool.create(2, {
      nativeInline: true,
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

  // On one core native checks stay on the main thread (pool.ts).
  it.skipIf(availableParallelism() < 2)(
    'checks a lone event inline at once, a burst of members’ beside the main thread, strangers’ on it',
    async () => {
      const pool = await VerifyPool.create(1, {
        helpInline: true,
        verifier: await pickVerifier('native'),
      })
      try {
        expect(pool.description).toMatch(
          /inline when idle, with up to 1 worker thread\(s\) under load$/,
        )
        const vs = vectors()
        // Nothing waits: checked in this call, no worker started.
        const lone = pool.verify(vs[0]!.event)
        expect(pool.verified).toBe(1)
        expect(pool.running).toBe(0)
        expect(await lone).toBe(vs[0]!.expect)
        const burst = Array.from({ length: 20 }, () => vs).flat()
        const got = await Promise.all(burst.map((v) => pool.verify(v.event)))
        expect(got).toEqual(burst.map((v) => v.expect))
        expect(pool.running).toBe(1)
        expect(pool.inFlight).toBe(0)
      } finally {
        await pool.close()
      }
    },
  )

  it.skipIf(availableParallelism() < 2)(
    'can run native in worker threads too, with the same answers',
    async () => {
      const pool = await VerifyPool.create(1, {
        helpInline: true,
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
    },
  )
})
