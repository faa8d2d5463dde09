import { Kind } from '../../events/kinds.js'
import type { IntakeBatch } from './batch.js'
import type { IntakeContext } from './context.js'

/**
 * Kinds offered to admission even when node.db has them: a grant or revocation may be there
 * (written by a CLI command such as kith pair) yet unknown to this process's verifier; a
 * definition a hub returns also tells that the hub holds it; a setting this node signed is in
 * node.db before its state has seen it.
 */
const alwaysOffered: ReadonlySet<number> = new Set([
  Kind.Grant,
  Kind.Revocation,
  Kind.ChannelDefinition,
  Kind.FleetSetting,
])

/** dedupe: drops what node.db already holds and repeats within the batch. */
export function dedupe(b: IntakeBatch, ctx: IntakeContext): boolean {
  const known = ctx.store.events.knownIds(b.events.map((e) => e.id))
  const seen = new Set<string>()
  b.fresh = b.events.filter((e) => {
    if (seen.has(e.id)) return false
    if (known.has(e.id) && !alwaysOffered.has(e.kind)) return false
    seen.add(e.id)
    return true
  })
  return b.fresh.length > 0
}
