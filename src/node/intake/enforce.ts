import type { IntakeBatch } from './batch.js'
import type { IntakeContext } from './context.js'

/**
 * enforce: when a key was revoked or the fleet's authority changed, the node applies it now
 * (agents no longer members stop, keys are shared, a hub's "revoked" is judged again).
 */
export function enforce(b: IntakeBatch, ctx: IntakeContext): boolean {
  if (b.revoked || b.authority) ctx.authorityChanged()
  return true
}
