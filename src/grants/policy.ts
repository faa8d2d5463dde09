import { isHex64 } from '../events/event.js'
import { GrantError } from './grant.js'

/**
 * Who may use an agent: only its owner (any of the owner's devices), every member of the fleet,
 * or the owner plus the listed keys. A listed key may be a person's owner key (covering their
 * devices) or one exact device or agent key.
 */
export type AgentPolicy = 'owner' | 'fleet' | readonly string[]

/** A key as the policy sees it: the key itself and the person (owner key) it belongs to. */
export interface PolicySubject {
  key: string
  /** undefined: not a member of the fleet (never allowed). */
  person: string | undefined
}

/** Whether `who` may act under `policy` on an agent owned by `agentOwner`. Fails closed. */
export function policyAllows(
  policy: AgentPolicy | undefined,
  who: PolicySubject,
  agentOwner: string | undefined,
): boolean {
  if (who.person === undefined || agentOwner === undefined) return false
  if (who.person === agentOwner) return true
  const p = policy ?? 'owner'
  if (p === 'fleet') return true
  if (p === 'owner') return false
  return p.includes(who.person) || p.includes(who.key)
}

/** The policy as one word or a list, for refusals, `kith agent list` and the spec. */
export function describePolicy(policy: AgentPolicy | undefined): string {
  const p = policy ?? 'owner'
  return typeof p === 'string' ? p : `owner + ${p.length} listed key${p.length === 1 ? '' : 's'}`
}

/**
 * Reads a policy from its stored or typed form: `owner`, `fleet`, or a list of hex keys (the
 * CLI converts npubs first). Throws GrantError('malformed') naming what is wrong.
 */
export function parsePolicy(value: unknown, what: string): AgentPolicy {
  if (value === 'owner' || value === 'fleet') return value
  if (Array.isArray(value) && value.length > 0 && value.every((k) => isHex64(k))) {
    return [...new Set(value)]
  }
  throw new GrantError(
    'malformed',
    `${what} is owner, fleet or a non-empty list of keys, got ${JSON.stringify(value)}`,
  )
}
