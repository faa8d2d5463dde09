import type { NostrEvent } from '../events/event.js'
import { decisionRefusal, parsePermissionDecision } from '../events/permission-decision.js'
import { parsePermissionRequest } from '../events/permission-request.js'
import { agentActorClasses, decisionAction, mayAct, type Action } from './authority.js'
import type { AgentPolicy } from './policy.js'
import { tally, type Tally } from './quorum.js'

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
  /**
   * The allow and approvers lists of the agent policy (kind 34151) with this id, when the asker
   * holds it and it counts (grants/agent-policy-standing.ts); used where `mayDecide` is absent.
   */
  policyOf?(id: string): { allow: AgentPolicy; approvers: AgentPolicy } | undefined
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
  const policy = card.policy === undefined ? undefined : ctx.policyOf?.(card.policy)
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
            allow: policy?.allow,
            approvers: policy?.approvers,
          }),
        )
  return may ? undefined : 'its author may not approve for the agent'
}

/**
 * A quorum card's tally (kith-agents, "Quorum") from the decisions a reader holds, or undefined
 * for a card without a quorum: the decisions that stand (`decisionStanding`), oldest first,
 * counted by person through grants/quorum.ts. The web app keeps a card open while it waits.
 */
export function cardTally(
  request: NostrEvent,
  decisions: readonly NostrEvent[],
  ctx: DecisionContext,
): Tally | undefined {
  let card: ReturnType<typeof parsePermissionRequest>
  try {
    card = parsePermissionRequest(request)
  } catch {
    // Unreadable: not a card, so no tally.
    return undefined
  }
  if (card.quorum === undefined) return undefined
  const votes = decisions
    .filter((d) => decisionStanding(d, request, ctx) === undefined)
    .sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : 1))
    .map((d) => {
      const optionId = parsePermissionDecision(d).optionId
      return {
        author: d.pubkey,
        optionKind: card.options.find((o) => o.optionId === optionId)?.kind,
      }
    })
  // Every vote here already stands: an approver under the policy the card names.
  return tally(card.quorum.n, votes, (key) => ({ person: ctx.personOf(key), approver: true }))
}
