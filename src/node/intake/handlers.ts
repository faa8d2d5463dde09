import type { NostrEvent } from '../../events/event.js'
import { Kind } from '../../events/kinds.js'
import type { IntakeTargets } from './context.js'

/**
 * What intake does with an admitted event of one kind, beyond keeping it. A kind with no handler
 * takes the plain path: kept in node.db when it is stored at all (grants, definitions, settings,
 * envelopes, profiles, session reports: the grant book and the readers find them there), handed
 * to nobody; an ephemeral kind with no handler is dropped.
 */
export interface KindHandler {
  /** Every stored event of the kind that is open (not sealed), history included. */
  readonly see?: (to: IntakeTargets, event: NostrEvent) => void
  /** Only an event to act on: not history, and one opened late only while it is fresh. */
  readonly act?: (to: IntakeTargets, event: NostrEvent) => void
  /** An ephemeral kind: handled at admission, never stored. */
  readonly live?: (to: IntakeTargets, event: NostrEvent) => void
}

/** The table, one row per handled kind (a unit test holds it to that). */
export const kindHandlerRows: readonly (readonly [number, KindHandler])[] = [
  [Kind.ChatMessage, { see: (to, e) => to.show(e), act: (to, e) => to.dispatch(e) }],
  [Kind.PermissionRequest, { see: (to, e) => to.show(e) }],
  [Kind.PermissionDecision, { see: (to, e) => to.show(e), act: (to, e) => to.applyDecision(e) }],
  [Kind.PushSubscription, { see: (to, e) => to.observePush(e) }],
  [Kind.AgentControl, { act: (to, e) => to.applyControl(e) }],
  [Kind.SessionControl, { act: (to, e) => to.applySessionControl(e) }],
  [Kind.Presence, { live: (to, e) => to.presence(e) }],
  [Kind.ObserverFrame, { live: (to, e) => to.frame(e) }],
]

const byKind: ReadonlyMap<number, KindHandler> = new Map(kindHandlerRows)

/** The handler of `kind`, or undefined: kept only (see KindHandler). */
export function handlerFor(kind: number): KindHandler | undefined {
  return byKind.get(kind)
}

/** Hands one stored event to its kind's handler: seen always, acted on when `act`. */
export function handOff(to: IntakeTargets, event: NostrEvent, act: boolean): void {
  const handler = handlerFor(event.kind)
  handler?.see?.(to, event)
  if (act) handler?.act?.(to, event)
}
