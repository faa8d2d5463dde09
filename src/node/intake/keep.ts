import type { IntakeBatch } from './batch.js'
import type { IntakeContext } from './context.js'

/**
 * keep: stores what was accepted in node.db, and what waited for it (a definition or setting
 * whose author's grant just came), which admission kept in memory only until now.
 */
export function keep(b: IntakeBatch, ctx: IntakeContext): boolean {
  b.outcomes = ctx.book.keep(b.accepted)
  const promoted = ctx.book.verifier.drainPromoted()
  if (promoted.length > 0) ctx.book.keep(promoted)
  return true
}
