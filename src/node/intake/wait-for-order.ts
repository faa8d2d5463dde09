import type { IntakeBatch } from './batch.js'
import type { IntakeContext } from './context.js'

/**
 * wait for order: batches are verified side by side but applied in the order they arrived (a
 * link hands live batches over without waiting), so an agent's reply never overtakes the
 * prompt, the progress or the card that came before it.
 */
export async function waitForOrder(b: IntakeBatch, ctx: IntakeContext): Promise<boolean> {
  await b.prior
  return !ctx.stopped()
}
