import { isSealed } from '../../events/e2e-seal.js'
import { e2eFreshSeconds } from '../timings.js'
import type { IntakeBatch } from './batch.js'
import type { IntakeContext } from './context.js'
import { handOff as toHandler } from './handlers.js'

/**
 * hand off: each event newly stored goes to its kind's handler (handlers.ts), acted on unless it
 * was admitted as history. Still sealed (no key yet, or refused): kept, never shown or acted on
 * as it stands. Events that waited for a key that just came are shown, and acted on while fresh.
 */
export function handOff(b: IntakeBatch, ctx: IntakeContext): boolean {
  b.accepted.forEach((e, i) => {
    if (b.outcomes[i] === 'stored' && !isSealed(e))
      toHandler(ctx.targets, e, !b.past.has(b.admitted[i]!.id))
  })
  for (const e of ctx.e2e.reopen())
    toHandler(ctx.targets, e, Math.abs(b.now - e.created_at) <= e2eFreshSeconds)
  return true
}
