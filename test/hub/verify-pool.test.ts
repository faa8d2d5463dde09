import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { signEvent } from '../../src/events/event.js'
// The worker file only exists compiled, so this test drives the built pool (npm test builds).
const distPool = '../../dist/hub/verify-pool.js'
const { VerifyPool } = (await import(distPool)) as typeof import('../../src/hub/verify-pool.js')

const sk = generateSecretKey()

describe('VerifyPool (worker threads)', () => {
  it('verifies batches across workers and reports which check failed', async () => {
    const pool = await VerifyPool.create(2)
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

  it('rejects what a dead worker held, then keeps serving with a respawned one', async () => {
    const pool = await VerifyPool.create(1)
    try {
      const e = signEvent({ kind: 9, created_at: 1, tags: [], content: 'x' }, sk)
      const slots = (pool as unknown as { slots: { worker: { terminate(): Promise<number> } }[] })
        .slots
      const pending = pool.verify(e)
      // Let the batch reach the worker, then kill it mid-flight.
      await new Promise((r) => setImmediate(r))
      await slots[0]!.worker.terminate()
      await expect(pending).rejects.toMatchObject({ code: 'error' })
      await expect.poll(() => slots.length).toBe(1)
      await expect.poll(async () => pool.verify(e)).toBe('ok')
    } finally {
      await pool.close()
    }
  })

  it('refuses work after close', async () => {
    const pool = await VerifyPool.create(1)
    await pool.close()
    const e = signEvent({ kind: 9, created_at: 1, tags: [], content: 'x' }, sk)
    await expect(pool.verify(e)).rejects.toMatchObject({ code: 'error' })
  })
})
