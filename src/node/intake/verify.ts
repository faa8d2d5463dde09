import type { IntakeBatch } from './batch.js'
import type { IntakeContext } from './context.js'

/**
 * verify: every fresh event's id and signature, off the main thread when the pool has workers.
 * Batches verify side by side; the next stage puts them back in order.
 */
export async function verify(b: IntakeBatch, ctx: IntakeContext): Promise<boolean> {
  b.verdicts = await Promise.all(b.fresh.map((e) => ctx.verify(e)))
  return true
}
