import { KithError } from '../errors.js'
import { parseAgentPolicy, type AgentPolicyEvent } from '../events/agent-policy.js'
import type { NostrEvent } from '../events/event.js'
import { mayAct, type ActorClass } from './authority.js'
import type { GrantVerifier } from './verifier.js'

/**
 * Which agent policies (kind 34151) count (kith-agents, "Agent policy"): one signed by a device
 * (or the owner key) of the agent's owner, as the fleet's grants stood at the policy's date. A
 * policy is addressable, so a hub keeps only the newest; a reader that keeps every version it
 * saw (a node's store, an audit file) picks the one in force at a moment with `policyAt`.
 */

/**
 * The people behind `key` at `at`, judged as history: what it signed at `at` while its grant
 * stood counts though it was revoked since (verifier.validChains with signedAt).
 */
function personsAt(v: GrantVerifier, key: string, at: number): Set<string> {
  const out = new Set<string>()
  if (key === v.founder) out.add(key)
  for (const chain of v.validChains(key, at, at)) {
    const own = chain.at(-1)
    // An agent speaks for its own work, never for a rule: its chain gives it no person here.
    if (own?.role === 'agent' || own?.role === 'hub') continue
    out.add(chain.findLast((g) => g.role === 'owner')?.subject ?? v.founder)
  }
  return out
}

/** The agent's owner(s) at `at`: the person its grant chain runs through. */
function ownersOfAgent(v: GrantVerifier, agent: string, at: number): Set<string> {
  const out = new Set<string>()
  for (const chain of v.validChains(agent, at, at)) {
    if (chain.at(-1)?.role !== 'agent') continue
    out.add(chain.findLast((g) => g.role === 'owner')?.subject ?? v.founder)
  }
  return out
}

/**
 * Why a kind-34151 event does not count, or undefined: it must read as a policy of this fleet,
 * and its author must be a device (or the owner key) of the agent's owner at its date. The
 * authority table's `agent.policy` row says who; this is the one place a reader asks it.
 */
export function policyRefusal(event: NostrEvent, v: GrantVerifier): string | undefined {
  let policy: AgentPolicyEvent
  try {
    policy = parseAgentPolicy(event)
  } catch (err) {
    if (!(err instanceof KithError)) throw err
    return `it is not a readable agent policy (${err.message})`
  }
  if (policy.fleet !== v.founder) return 'it names another fleet'
  const at = event.created_at
  const owners = ownersOfAgent(v, policy.agent, at)
  if (owners.size === 0) return 'its agent was not a granted agent of this fleet at its date'
  const classes: ActorClass[] = [...personsAt(v, event.pubkey, at)].some((p) => owners.has(p))
    ? ['owner']
    : ['member']
  if (!mayAct('agent.policy', classes))
    return "its author was not a device of the agent's owner at its date"
  return undefined
}

/**
 * The policy of `agent` in force at `time`: of the versions that count, the newest dated at or
 * before `time` (ties: the larger id, as NIP-01 replaces). undefined: none was in force yet.
 */
export function policyAt(
  versions: readonly NostrEvent[],
  agent: string,
  time: number,
  v: GrantVerifier,
): AgentPolicyEvent | undefined {
  let best: NostrEvent | undefined
  for (const e of versions) {
    if (e.created_at > time) continue
    if (e.tags.find((t) => t[0] === 'd')?.[1] !== agent) continue
    if (policyRefusal(e, v) !== undefined) continue
    if (
      best === undefined ||
      e.created_at > best.created_at ||
      (e.created_at === best.created_at && e.id > best.id)
    )
      best = e
  }
  return best === undefined ? undefined : parseAgentPolicy(best)
}
