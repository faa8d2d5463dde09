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
