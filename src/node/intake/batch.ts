import type { NostrEvent } from '../../events/event.js'
import type { VerifyResult } from '../../verify/result.js'

/**
 * One delivery from a hub link as it goes through the intake stages (stages.ts). Each stage
 * reads what the stages before it wrote and writes its own part; a stage that leaves nothing for
 * the next ends the batch.
 */
export interface IntakeBatch {
  /** The hub it came from (a definition it returns is one that hub holds); none from a test. */
  readonly from: string | undefined
  /** Resolves once the batch that arrived before this one is applied (see KithNode.intake). */
  readonly prior: Promise<void>
  /** As delivered. */
  readonly events: readonly NostrEvent[]
  /** dedupe: not stored yet (authority kinds are always offered again), each once. */
  fresh: NostrEvent[]
  /** verify: each fresh event's signature and id check, by index. */
  verdicts: VerifyResult[]
  /** admit: the fresh events that verified. */
  valid: NostrEvent[]
  /** admit: the time admission judged at (seconds). */
  now: number
  /** admit: what admission took and a node keeps (ephemeral kinds went to their handlers). */
  admitted: NostrEvent[]
  /** admit: ids admitted as history (a since-revoked key, while it stood): shown, not acted on. */
  past: Set<string>
  /** admit: a key of the fleet was revoked. */
  revoked: boolean
  /** admit: the fleet's authority changed (grants, revocations, definitions, settings). */
  authority: boolean
  /** open: `admitted` with sealed events opened where their keys are here, by index. */
  accepted: NostrEvent[]
  /** keep: what node.db did with each accepted event, by index. */
  outcomes: ('stored' | 'duplicate' | 'superseded')[]
}

export function newBatch(
  events: readonly NostrEvent[],
  from: string | undefined,
  prior: Promise<void>,
): IntakeBatch {
  return {
    from,
    prior,
    events,
    fresh: [],
    verdicts: [],
    valid: [],
    now: 0,
    admitted: [],
    past: new Set(),
    revoked: false,
    authority: false,
    accepted: [],
    outcomes: [],
  }
}
