import { isEphemeralKind, Kind } from '../../events/kinds.js'
import type { IntakeBatch } from './batch.js'
import type { IntakeContext } from './context.js'
import { handlerFor } from './handlers.js'

/** Refusals of these kinds are logged: a grant or definition ignored changes what a node does. */
const loggedRefusals: ReadonlySet<number> = new Set([
  Kind.Grant,
  Kind.Revocation,
  Kind.ChannelDefinition,
])

/**
 * admit: forged events are dropped and counted; the rest go through the same admission a hub
 * applies (`FleetState.admitBatch`: grants first, then definitions, then the rest), so whatever
 * link an event came through, a node takes only what a hub would take. Ephemeral kinds admitted
 * go to their handlers here and are not kept.
 */
export function admit(b: IntakeBatch, ctx: IntakeContext): boolean {
  b.valid = b.fresh.filter((_, i) => b.verdicts[i] === 'ok')
  // A hub that returned a definition holds it: events of that channel may go to it now.
  if (b.from !== undefined) {
    const held = b.valid.filter((e) => e.kind === Kind.ChannelDefinition).map((e) => e.id)
    if (held.length > 0) ctx.store.markHeld(held, b.from)
  }
  if (b.valid.length < b.fresh.length)
    ctx.log(`dropped ${b.fresh.length - b.valid.length} events with bad ids or signatures`)
  b.now = ctx.now()
  // History too: what a since-revoked key signed while it stood is shown (as every device
  // shows it), never acted on.
  const results = ctx.book.state.admitBatch(b.valid, b.now, { keepPending: true, history: true })
  for (const { event: e, admission } of results) {
    if (!admission.ok) {
      if (loggedRefusals.has(e.kind))
        ctx.log(`ignored ${e.kind} ${e.id.slice(0, 12)}…: ${admission.error.message}`)
      continue
    }
    if (admission.past === true) b.past.add(e.id)
    b.revoked ||= admission.revoked
    b.authority ||= admission.authority
    if (!admission.store) continue
    if (isEphemeralKind(e.kind)) {
      handlerFor(e.kind)?.live?.(ctx.targets, e)
      continue
    }
    b.admitted.push(e)
  }
  return b.admitted.length > 0
}
