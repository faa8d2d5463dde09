import type { NostrEvent } from '../../events/event.js'
import type { IntakeBatch } from './batch.js'
import type { IntakeContext } from './context.js'

/**
 * republish: what this node learns of the fleet's authority it passes on to every hub it links
 * to (kith-grants, "Propagation"), so a hub that missed a revocation gets it from any node.
 */
export function republish(b: IntakeBatch, ctx: IntakeContext): boolean {
  ctx.republish(
    ctx.book.verifier.drainAccepted().flatMap((id): NostrEvent[] => {
      const e = b.accepted.find((x) => x.id === id) ?? ctx.book.event(id)
      return e === undefined ? [] : [e]
    }),
  )
  return true
}
