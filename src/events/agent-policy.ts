import type { EventTemplate, NostrEvent } from './event.js'
import { isHex64 } from './event.js'
import { Kind } from './kinds.js'
import { hexKey, invalid, jsonObject, oneTag, requireKind, tagValues } from './agent-event-parts.js'

/**
 * An agent's policy on the wire (kind 34151, kith-agents "Agent policy"): the rule its hosting
 * node judges prompts and cards by, signed by a device of the agent's owner whenever it changes,
 * so every device and any auditor knows the rule in force at any moment. Addressable: `d` is the
 * agent's key; a newer version replaces an older one at a hub, and readers that keep every
 * version pick the one in force at a date (grants/agent-policy-standing.ts).
 */

/** ACP's `ToolKind` values: the kinds a quorum may name (`--for`). */
export const acpToolKinds = [
  'read',
  'edit',
  'delete',
  'move',
  'search',
  'execute',
  'think',
  'fetch',
  'switch_mode',
  'other',
] as const
export type AcpToolKind = (typeof acpToolKinds)[number]

/** At most this many people may be required: more is a typo, not a policy. */
export const quorumMax = 9

/** N distinct people must allow a card of one of `for`'s tool kinds before its call runs. */
export interface Quorum {
  n: number
  for: AcpToolKind[]
}

/** Who may prompt / approve: the owner only, every member, or the owner plus listed keys. */
export type PolicyList = 'owner' | 'fleet' | string[]

export type PolicyPermissions = 'ask' | 'allow-reads' | 'allow-all'
const permissionValues: readonly PolicyPermissions[] = ['ask', 'allow-reads', 'allow-all']

/** The content of a kind-34151 event, in wire order. */
export interface AgentPolicyContent {
  allow: PolicyList
  approvers: PolicyList
  permissions: PolicyPermissions
  /** Absent: one approver's decision is enough (as `--quorum 1`). */
  quorum?: Quorum
}

export interface AgentPolicySpec extends AgentPolicyContent {
  /** The agent's key (its `d` and `p`). */
  agent: string
  /** The founder's key. */
  fleet: string
}

/** A parsed kind-34151 event. */
export interface AgentPolicyEvent extends AgentPolicyContent {
  id: string
  /** Who signed it: a device of the agent's owner, if it is to count. */
  author: string
  createdAt: number
  agent: string
  fleet: string
}

/**
 * Reads a quorum from its stored or wire form: `{n, for}` with n in 1..9 and `for` a non-empty
 * list of ACP tool kinds. n = 1 asks nothing more than one approver: it reads as no quorum
 * (undefined). Throws KithError('invalid', bad-content) naming what is wrong.
 */
export function parseQuorum(value: unknown, what: string): Quorum | undefined {
  if (value === undefined) return undefined
  const q = value as Record<string, unknown> | null
  if (typeof q !== 'object' || q === null || Array.isArray(q))
    throw invalid('bad-content', `${what}: quorum must be an object {n, for}`)
  if (typeof q.n !== 'number' || !Number.isInteger(q.n) || q.n < 1 || q.n > quorumMax)
    throw invalid('bad-content', `${what}: quorum n must be a whole number from 1 to ${quorumMax}`)
  const kinds = q.for
  if (
    !Array.isArray(kinds) ||
    kinds.length === 0 ||
    !kinds.every((k) => (acpToolKinds as readonly unknown[]).includes(k))
  )
    throw invalid(
      'bad-content',
      `${what}: quorum for must be a non-empty list of ACP tool kinds (${acpToolKinds.join(', ')})`,
    )
  if (q.n === 1) return undefined
  return { n: q.n, for: [...new Set(kinds as AcpToolKind[])] }
}

/** `execute,edit` as the tool kinds of a quorum; throws `usage` naming the valid ones. */
export function parseToolKinds(text: string): AcpToolKind[] {
  const kinds = text
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '')
  const bad = kinds.filter((k) => !(acpToolKinds as readonly string[]).includes(k))
  if (kinds.length === 0 || bad.length > 0)
    throw invalid(
      'bad-content',
      `--for takes ACP tool kinds (${acpToolKinds.join(', ')}), comma-separated; got ${JSON.stringify(text)}`,
    )
  return [...new Set(kinds as AcpToolKind[])]
}

/** Whether a call of `toolKind` needs the quorum (`quorum` absent: never). */
export function quorumApplies(quorum: Quorum | undefined, toolKind: string): boolean {
  return quorum !== undefined && (quorum.for as readonly string[]).includes(toolKind)
}

function parseList(value: unknown, what: string): PolicyList {
  if (value === 'owner' || value === 'fleet') return value
  if (Array.isArray(value) && value.length > 0 && value.every((k) => isHex64(k)))
    return [...new Set(value)]
  throw invalid('bad-content', `${what} is owner, fleet or a non-empty list of hex keys`)
}

/** The unsigned policy (signed by a device of the agent's owner); tag and content order fixed. */
export function makeAgentPolicy(spec: AgentPolicySpec, createdAt: number): EventTemplate {
  const content: AgentPolicyContent = {
    allow: spec.allow,
    approvers: spec.approvers,
    permissions: spec.permissions,
    ...(spec.quorum === undefined || spec.quorum.n < 2 ? {} : { quorum: spec.quorum }),
  }
  return {
    kind: Kind.AgentPolicy,
    created_at: createdAt,
    tags: [
      ['d', spec.agent],
      ['p', spec.agent],
      ['fleet', spec.fleet],
    ],
    content: JSON.stringify(content),
  }
}

/**
 * Reads a kind-34151 event: one `d` and one `p`, both the agent's key; one `fleet`; content with
 * allow, approvers, permissions and an optional quorum within its bounds. Throws
 * KithError('invalid') (wrong-kind, bad-tags, bad-content). Checks neither signature nor who
 * signed it (grants/agent-policy-standing.ts does).
 */
export function parseAgentPolicy(event: NostrEvent): AgentPolicyEvent {
  const what = 'agent policy'
  requireKind(event, Kind.AgentPolicy, 'an agent policy')
  const agent = hexKey(oneTag(event, 'd'), 'the agent (d)')
  const named = tagValues(event, 'p')
  if (named.length !== 1 || named[0] !== agent)
    throw invalid('bad-tags', `${what}: expected one p tag, the agent its d names`)
  const fleet = hexKey(oneTag(event, 'fleet'), 'the fleet')
  const c = jsonObject(event.content, what)
  if (!(permissionValues as readonly unknown[]).includes(c.permissions))
    throw invalid('bad-content', `${what}: permissions is ${permissionValues.join(', ')}`)
  const quorum = parseQuorum(c.quorum, what)
  return {
    id: event.id,
    author: event.pubkey,
    createdAt: event.created_at,
    agent,
    fleet,
    allow: parseList(c.allow, `${what}: allow`),
    approvers: parseList(c.approvers, `${what}: approvers`),
    permissions: c.permissions as PolicyPermissions,
    ...(quorum === undefined ? {} : { quorum }),
  }
}
