import { makeAgentPolicy, type AgentPolicyContent } from '../events/agent-policy.js'
import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import type { AgentRecord } from '../identity/agents.js'
import { nodeSigner } from './agent-signer.js'
import type { NodeContext } from './node-context.js'

/** The policy content a record says, in wire order (events/agent-policy.ts). */
export function policyContent(record: AgentRecord): AgentPolicyContent {
  const list = (p: AgentRecord['allow']) =>
    p === undefined ? 'owner' : typeof p === 'string' ? p : [...p]
  return {
    allow: list(record.allow),
    approvers: list(record.approvers),
    permissions: record.permissions ?? 'ask',
    ...(record.quorum === undefined ? {} : { quorum: record.quorum }),
  }
}

/**
 * The hosting node's side of agent policies (kind 34151, kith-agents "Agent policy"): on start
 * and whenever `kith agent add/set` changes a record, the policy it now judges by is published,
 * signed by this device (a device of the agent's owner), so the fleet and any auditor know the
 * rule in force. An unchanged policy is not published again. Not sealed: it names no channel,
 * and a sealed fleet has no fleet-wide key to seal it under (nips/kith-e2e.md).
 */
export class AgentPolicies {
  /** The id of the version in force, by agent key. */
  private readonly inForce = new Map<string, string>()

  constructor(private readonly node: NodeContext) {}

  /** The id of the policy `agent` is judged by now, as published here. */
  current(agent: string): string | undefined {
    return this.inForce.get(agent)
  }

  /** Publishes `record`'s policy unless the newest this device signed already says it. */
  publish(record: AgentRecord): NostrEvent | undefined {
    const content = makeAgentPolicy(this.spec(record), 0).content
    const newest = this.node.store.reads.newest({
      kinds: [Kind.AgentPolicy],
      authors: [this.node.id.devicePubkey],
      tags: { d: [record.pubkey] },
    })
    if (newest !== undefined) {
      const sameFleet = newest.tags.some((t) => t[0] === 'fleet' && t[1] === this.node.book.fleet)
      if (sameFleet && newest.content === content) {
        this.inForce.set(record.pubkey, newest.id)
        return undefined
      }
    }
    // Dated after the newest: an addressable event with an older date would not replace it.
    const at = Math.max(this.node.now(), newest === undefined ? 0 : newest.created_at + 1)
    const event = nodeSigner(this.node)(
      makeAgentPolicy(this.spec(record), at),
      this.node.id.deviceSecret,
    )
    this.inForce.set(record.pubkey, event.id)
    this.node.enqueue(event)
    this.node.emit(event)
    this.node.pump()
    this.node.log(`agent ${record.name}: published its policy ${event.id.slice(0, 8)}`)
    return event
  }

  private spec(record: AgentRecord) {
    return { agent: record.pubkey, fleet: this.node.book.fleet, ...policyContent(record) }
  }
}
