import { signEvent, type EventTemplate, type NostrEvent } from '../events/event.js'
import type { AgentKey } from './node-context.js'

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
): NostrEvent | undefined {
  const why = retiredReason(agent)
  if (why !== undefined) {
    log(`agent ${agent.record.name}: ${what} not posted: ${why}`)
    return undefined
  }
  return signEvent(template, agent.secret)
}
