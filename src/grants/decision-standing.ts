import type { NostrEvent } from '../events/event.js'
import { decisionRefusal, parsePermissionDecision } from '../events/permission-decision.js'
import { parsePermissionRequest } from '../events/permission-request.js'
import { agentActorClasses, decisionAction, mayAct, type Action } from './authority.js'

/** What judging a decision needs of the fleet, from whoever asks (a node, the web app). */
export interface DecisionContext {
  fleet: string
  /** The person a key belongs to now (undefined: not a member). */
  personOf(key: string): string | undefined
  /**
   * Whether `author` may take `action` for `agent`, with the agent's real policies where the
   * asker hosts it. Absent: the agent's own person only (its policies are its host's).
   */
  mayDecide?(author: string, agent: string, action: Action): boolean
}

/**
 * Why `decision` does not answer the card `request`, or undefined when it does: bound to the card
 * as its host binds it (events/permission-decision.ts: fleet, h, p, dated within the card's life,
 * one of its options) and signed by someone the authority table lets take the decision's action
 * (card.decide.*, by the option's kind). The one rule for what counts as an answer: the notifier
 * withdraws a card's notifications by it and the web app closes a card by it, so a non-approver's
 * decision hides no card from the person who can answer it.
 */
export function decisionStanding(
  decision: NostrEvent,
  request: NostrEvent,
  ctx: DecisionContext,
): string | undefined {
  let card: ReturnType<typeof parsePermissionRequest>
  try {
    card = parsePermissionRequest(request)
  } catch {
    // A card that does not read was never shown or notified: nothing answers it.
    return 'the card is unreadable'
  }
  const refusal = decisionRefusal(
    decision,
    {
      id: request.id,
      agent: card.agent,
      channel: card.channel,
      createdAt: request.created_at,
      expires: card.expires,
      options: card.options,
    },
    { fleet: ctx.fleet },
  )
  if (refusal !== undefined) return refusal
  const optionId = parsePermissionDecision(decision).optionId
  const action = decisionAction(card.options.find((o) => o.optionId === optionId)?.kind)
  const may =
    ctx.mayDecide !== undefined
      ? ctx.mayDecide(decision.pubkey, card.agent, action)
      : mayAct(
          action,
          agentActorClasses({
            key: decision.pubkey,
            person: ctx.personOf(decision.pubkey),
            agentOwner: ctx.personOf(card.agent),
            agentKey: card.agent,
            allow: undefined,
            approvers: undefined,
          }),
        )
  return may ? undefined : 'its author may not approve for the agent'
}
