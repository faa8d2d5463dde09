import type { IntakeBatch } from './batch.js'
import type { IntakeContext } from './context.js'

/**
 * open (kith-e2e/1): key envelopes first, then sealed events are opened where their keys are
 * here, so node.db, chat and agents see them opened.
 */
export function open(b: IntakeBatch, ctx: IntakeContext): boolean {
  b.accepted = ctx.e2e.open(b.admitted)
  return true
}
