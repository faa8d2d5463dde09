import { KithError } from '../errors.js'
import { checkFresh, controlMaxFutureSeconds, requireFleet } from './agent-binding.js'
import type { EventTemplate, NostrEvent } from './event.js'
import { Kind } from './kinds.js'
import {
  hexKey,
  invalid,
  jsonObject,
  oneChannel,
  oneTag,
  optionalFleet,
  requireKind,
  stringField,
} from './agent-event-parts.js'

export interface PermissionDecisionSpec {
  /** The request (kind 4142) answered: its id, channel and agent, which the decision repeats. */
  request: { id: string; channel: string; agent: string }
  /** The founder's key: a decision without it is never acted on (kith-agents/1, Binding). */
  fleet: string
  /** One of the request's optionIds. */
  optionId: string
}

/** A parsed kind-4143 event. */
export interface PermissionDecision {
  id: string
  /** The deciding key (a device, usually). */
  author: string
  createdAt: number
  /** The request's id (its `e`). */
  request: string
  channel: string
  /** The agent that asked (its `p`). */
  agent: string
  fleet: string | undefined
  optionId: string
}

/**
 * The unsigned decision (signed by the deciding device): `e` the request, `h` its channel, `p`
 * its agent, `fleet`, in that order; content `{"optionId": …}`.
 */
export function makePermissionDecision(
  spec: PermissionDecisionSpec,
  createdAt: number,
): EventTemplate {
  return {
    kind: Kind.PermissionDecision,
    created_at: createdAt,
    tags: [
      ['e', spec.request.id],
      ['h', spec.request.channel],
      ['p', spec.request.agent],
      ['fleet', spec.fleet],
    ],
    content: JSON.stringify({ optionId: spec.optionId }),
  }
}

/**
 * Reads a kind-4143 event: exactly one `e`, `h` and `p`, at most one `fleet`, and an `optionId`.
 * Throws KithError('invalid') with the reason `wrong-kind`, `bad-tags` or `bad-content`. Whether
 * it binds to an open request (fleet, channel, agent, date, option) is the hosting node's
 * decision (agent-binding.ts), not the parser's.
 */
export function parsePermissionDecision(event: NostrEvent): PermissionDecision {
  const what = 'permission decision'
  requireKind(event, Kind.PermissionDecision, 'a permission decision')
  const request = hexKey(oneTag(event, 'e'), 'the request id')
  const channel = oneChannel(event)
  const agent = hexKey(oneTag(event, 'p'), 'the agent')
  const fleet = optionalFleet(event)
  const optionId = stringField(jsonObject(event.content, what), 'optionId', what)
  if (optionId === '') throw invalid('bad-content', `${what}: optionId is empty`)
  return {
    id: event.id,
    author: event.pubkey,
    createdAt: event.created_at,
    request,
    channel,
    agent,
    fleet,
    optionId,
  }
}

/** The card a decision is judged against: what the host (and a notifier) knows of the request. */
export interface DecidedCard {
  id: string
  agent: string
  channel: string
  /** The request's date and expiry: a decision dated outside its life answers nothing. */
  createdAt?: number
  expires?: number
  /** Its options: a decision must name one. */
  options?: readonly { optionId: string }[]
}

/**
 * Why `decision` does not answer `card` (kith-agents/1, "Binding"), or undefined: it must name
 * the card (`e`), this fleet, the card's channel (`h`) and agent (exactly one `p`); with `now`, be
 * dated within the freshness bound (the hosting node, acting as it arrives); with the card's
 * dates, be dated within its life; with its options, name one of them. The hosting node acts
 * only on such a decision, and a notifier withdraws a card's notifications only for one.
 */
export function decisionRefusal(
  decision: NostrEvent,
  card: DecidedCard,
  ctx: { fleet: string; now?: number },
): string | undefined {
  if (decision.kind !== Kind.PermissionDecision) return 'it is not a decision'
  const named = decision.tags.filter((t) => t[0] === 'e').map((t) => t[1])
  if (named.length !== 1 || named[0] !== card.id) return 'it does not name the request (its e tag)'
  const fleet = requireFleet(decision, ctx.fleet)
  if (!fleet.ok) return fleet.reason
  const channel = decision.tags.find((t) => t[0] === 'h')?.[1]
  if (channel !== card.channel)
    return `it was posted in ${channel === undefined ? 'no channel' : `#${channel}`}, the request is in #${card.channel}`
  const agents = decision.tags.filter((t) => t[0] === 'p').map((t) => t[1])
  if (agents.length !== 1 || agents[0] !== card.agent)
    return 'it does not name the agent that asked (its p tag)'
  if (ctx.now !== undefined) {
    const fresh = checkFresh(decision, ctx.now)
    if (!fresh.ok) return fresh.reason
  }
  if (
    card.createdAt !== undefined &&
    decision.created_at < card.createdAt - controlMaxFutureSeconds
  )
    return 'it is dated before the request was made'
  if (card.expires !== undefined && decision.created_at > card.expires)
    return 'it is dated after the request expired'
  if (card.options !== undefined) {
    let optionId: string
    try {
      optionId = parsePermissionDecision(decision).optionId
    } catch (err) {
      if (!(err instanceof KithError)) throw err
      return `it is not a readable decision (${err.message})`
    }
    if (!card.options.some((o) => o.optionId === optionId))
      return 'it names no option of the request'
  }
  return undefined
}
