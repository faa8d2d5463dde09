import { signEvent, type EventTemplate, type NostrEvent } from '../events/event.js'
import { authTagFor } from '../grants/nip-oa.js'
import { authTagsOf } from '../identity/agents.js'
import type { AgentKey, HostedAgent, NodeContext } from './node-context.js'

/**
 * Signs as a hosted agent, unless the agent is retired (its key revoked, this node removed from
 * the fleet or stopping) or its key already wiped: then nothing is signed and the caller is told
 * (undefined), and the log says what was dropped. A turn cancelled by a revocation still ends
 * after it; its reply must never reach a zeroed key (an invalid scalar throws, and would take the
 * whole node down).
 */
/** Why nothing more may be signed for `agent` (retired, or its key wiped), or undefined. */
export function retiredReason(agent: AgentKey): string | undefined {
  return agent.retired ?? (agent.secret.every((b) => b === 0) ? 'its key is wiped' : undefined)
}

export function signAsAgent(
  agent: AgentKey,
  template: EventTemplate,
  log: (line: string) => void,
  what: string,
  sign: (template: EventTemplate, secret: Uint8Array) => NostrEvent = signEvent,
): NostrEvent | undefined {
  const why = retiredReason(agent)
  if (why !== undefined) {
    log(`agent ${agent.record.name}: ${what} not posted: ${why}`)
    return undefined
  }
  return sign(template, agent.secret)
}

/** The node's signer for channel events (sealing when the fleet encrypts), else signEvent. */
export function nodeSigner(node: {
  sign?(template: EventTemplate, secret: Uint8Array): NostrEvent
}): (template: EventTemplate, secret: Uint8Array) => NostrEvent {
  return (t, s) => (node.sign === undefined ? signEvent(t, s) : node.sign(t, s))
}

/**
 * Posts a chat notice (made by events/chat.ts) as a hosted agent, with its NIP-OA `auth` tag
 * added, signed through the node's signer (sealed when the fleet encrypts), queued, shown and
 * sent. Undefined when the agent may no longer sign (see signAsAgent).
 */
export function postAsAgent(
  node: NodeContext,
  agent: HostedAgent,
  template: EventTemplate,
  what: string,
): NostrEvent | undefined {
  const auth = authTagFor(authTagsOf(agent.record), template)
  const notice = signAsAgent(
    agent,
    auth ? { ...template, tags: [...template.tags, auth] } : template,
    node.log,
    what,
    nodeSigner(node),
  )
  if (notice === undefined) return undefined
  node.enqueue(notice)
  node.emit(notice)
  node.pump()
  return notice
}
