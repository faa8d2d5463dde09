import { KithError } from '../errors.js'
import { isNotice } from '../events/agent-binding.js'
import type { AgentPolicyEvent } from '../events/agent-policy.js'
import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { decisionRefusal, parsePermissionDecision } from '../events/permission-decision.js'
import { parsePermissionRequest, type PermissionRequest } from '../events/permission-request.js'
import { policyAt } from './agent-policy-standing.js'
import { agentActorClasses, decisionAction, mayAct } from './authority.js'
import { tally } from './quorum.js'
import type { GrantVerifier } from './verifier.js'

/**
 * `kith audit` (issue 33): who asked each agent to do what, who approved each tool call, and
 * whether the rules in force allowed it, checked offline from signed events alone. Pure: the
 * caller hands the events (a node's store, a hub's, a file) and a verifier holding the fleet's
 * grants and revocations; every judgement is made at the event's own date (history), under the
 * agent policy (kind 34151) in force then.
 *
 * What a tool call did is not on the wire; what is: a card (4142) was "answered" when its turn
 * went on past it (the agent's answer to the prompt, or a later card of the turn) with no
 * timeout notice for it, no cancel of the turn and no stop line. An honest host answers a card
 * only on a decision its rules allow, so an answered card whose decisions do not justify it is
 * flagged.
 */

export type AuditFlagCode =
  /** An answered card whose only standing decisions came from keys that may not approve. */
  | 'non-approver-counted'
  /** An answered quorum card with fewer people allowing it than its quorum, and no reject. */
  | 'quorum-short'
  /** A session started in a mode (it may stop asking) by someone who is not an approver. */
  | 'bypass-start'
  /** A card answered by a decision made after the agent's policy changed from the card's. */
  | 'policy-changed'
  /** A card naming a policy that is not the one in force at its date (or none that counts). */
  | 'policy-mismatch'
  /** A prompt whose author had no valid grant chain at its date. */
  | 'prompter-not-member'

export interface AuditFlag {
  code: AuditFlagCode
  /** The event the flag is about (a prompt, a card). */
  event: string
  message: string
}

export interface AuditDecision {
  id: string
  author: string
  person: string | undefined
  optionId: string
  optionKind: string | undefined
  /** Whether its author could decide under the policy in force at the decision's date. */
  approver: boolean
  at: number
}

export interface AuditCard {
  id: string
  toolKind: string
  title: string
  /** Hex SHA-256 of the call's input, as the card carries it. */
  input: string
  /** The policy the card names, and the one in force at its date. */
  policy: string | undefined
  policyInForce: string | undefined
  quorum: { n: number; for: string[] } | undefined
  decisions: AuditDecision[]
  outcome: 'allowed' | 'rejected' | 'answered' | 'timed out' | 'open'
  at: number
}

export interface AuditTurn {
  agent: string
  prompt: string
  channel: string | undefined
  prompter: { key: string; person: string | undefined }
  /** The grant ids of the prompter's chain valid at the prompt's date (empty: none). */
  chain: string[]
  /** The mode the prompt started its session in, if it set one. */
  mode: string | undefined
  cards: AuditCard[]
  outcome: 'answered' | 'stopped' | 'no answer'
  at: number
  /** Seconds from the prompt to the agent's answer. */
  durationSeconds: number | undefined
}

export interface AuditReport {
  turns: AuditTurn[]
  flags: AuditFlag[]
}

const tagValue = (e: NostrEvent, name: string) => e.tags.find((t) => t[0] === name)?.[1]
const byDate = (a: NostrEvent, b: NostrEvent) =>
  a.created_at - b.created_at || (a.id < b.id ? -1 : 1)

/** The audit of `events` (any order, any kinds; duplicates ignored) in the fleet `v` holds. */
export function audit(events: readonly NostrEvent[], v: GrantVerifier): AuditReport {
  const unique = [...new Map(events.map((e) => [e.id, e])).values()].sort(byDate)
  const policies = unique.filter((e) => e.kind === Kind.AgentPolicy)
  const cards: { event: NostrEvent; card: PermissionRequest }[] = []
  for (const e of unique) {
    if (e.kind !== Kind.PermissionRequest) continue
    try {
      cards.push({ event: e, card: parsePermissionRequest(e) })
    } catch (err) {
      if (!(err instanceof KithError)) throw err
      // Not a card any host made or any client showed: nothing was asked by it.
    }
  }
  const agents = new Set(cards.map((c) => c.card.agent))
  for (const p of policies) {
    const d = tagValue(p, 'd')
    if (d !== undefined) agents.add(d)
  }
  const flags: AuditFlag[] = []
  const turns: AuditTurn[] = []
  for (const prompt of unique) {
    if (prompt.kind !== Kind.ChatMessage || tagValue(prompt, 'e') !== undefined) continue
    for (const agent of prompt.tags.filter((t) => t[0] === 'p').map((t) => t[1]!)) {
      if (!agents.has(agent)) continue
      turns.push(auditTurn(prompt, agent, unique, cards, policies, v, flags))
    }
  }
  return { turns, flags }
}

function auditTurn(
  prompt: NostrEvent,
  agent: string,
  all: readonly NostrEvent[],
  cards: readonly { event: NostrEvent; card: PermissionRequest }[],
  policies: readonly NostrEvent[],
  v: GrantVerifier,
  flags: AuditFlag[],
): AuditTurn {
  const at = prompt.created_at
  const chain = v.validChains(prompt.pubkey, at, at)[0]
  if (chain === undefined && prompt.pubkey !== v.founder)
    flags.push({
      code: 'prompter-not-member',
      event: prompt.id,
      message: `the prompt's author had no valid grant at ${iso(at)}`,
    })
  const mode = prompt.tags.find((t) => t[0] === 'mode')?.[1]
  if (mode !== undefined) {
    const policy = policyAt(policies, agent, at, v)
    if (!mayDecide(v, prompt.pubkey, agent, at, policy, 'allow_once'))
      flags.push({
        code: 'bypass-start',
        event: prompt.id,
        message: `a session was started in mode ${mode} by a key that may not approve the agent's calls`,
      })
  }
  const replies = all.filter(
    (e) =>
      e.kind === Kind.ChatMessage &&
      e.pubkey === agent &&
      e.tags.some((t) => t[0] === 'e' && t[1] === prompt.id),
  )
  const answer = replies.find((e) => !isNotice(e))
  const stopped = answer !== undefined && /^(⏹|⚠|✋)/u.test(answer.content.split('\n').at(-1) ?? '')
  const cancelled = all.some(
    (e) => e.kind === Kind.AgentControl && e.tags.some((t) => t[0] === 'e' && t[1] === prompt.id),
  )
  const mine = cards.filter((c) => c.card.agent === agent && c.card.prompt === prompt.id)
  const audited = mine.map((c, i) => {
    const next = mine[i + 1]?.event.created_at ?? answer?.created_at
    const timedOut = replies.some(
      (r) => isNotice(r) && r.content.startsWith('⏱') && r.content.includes(`"${c.card.title}"`),
    )
    const wentOn =
      next !== undefined && !timedOut && !cancelled && !(stopped && i === mine.length - 1)
    return auditCard(c, wentOn, timedOut, all, policies, v, flags)
  })
  return {
    agent,
    prompt: prompt.id,
    channel: tagValue(prompt, 'h'),
    prompter: {
      key: prompt.pubkey,
      person: personAt(v, prompt.pubkey, at),
    },
    chain: (chain ?? []).map((g) => g.id),
    mode,
    cards: audited,
    outcome: answer === undefined ? 'no answer' : stopped || cancelled ? 'stopped' : 'answered',
    at,
    durationSeconds: answer === undefined ? undefined : answer.created_at - at,
  }
}

function auditCard(
  c: { event: NostrEvent; card: PermissionRequest },
  wentOn: boolean,
  timedOut: boolean,
  all: readonly NostrEvent[],
  policies: readonly NostrEvent[],
  v: GrantVerifier,
  flags: AuditFlag[],
): AuditCard {
  const { event, card } = c
  const inForce = policyAt(policies, card.agent, event.created_at, v)
  if (card.policy !== undefined && card.policy !== inForce?.id)
    flags.push({
      code: 'policy-mismatch',
      event: event.id,
      message: `"${card.title}" names policy ${card.policy.slice(0, 8)}, but ${inForce === undefined ? 'none that counts' : inForce.id.slice(0, 8)} was in force at its date`,
    })
  const bound = all
    .filter((d) => d.kind === Kind.PermissionDecision)
    .filter(
      (d) =>
        decisionRefusal(
          d,
          {
            id: event.id,
            agent: card.agent,
            channel: card.channel,
            createdAt: event.created_at,
            expires: card.expires,
            options: card.options,
          },
          { fleet: v.founder },
        ) === undefined,
    )
  const decisions: AuditDecision[] = bound.map((d) => {
    const optionId = parsePermissionDecision(d).optionId
    const optionKind = card.options.find((o) => o.optionId === optionId)?.kind
    const policy = policyAt(policies, card.agent, d.created_at, v)
    return {
      id: d.id,
      author: d.pubkey,
      person: personAt(v, d.pubkey, d.created_at),
      optionId,
      optionKind,
      approver: mayDecide(v, d.pubkey, card.agent, d.created_at, policy, optionKind),
      at: d.created_at,
    }
  })
  const standing = decisions.filter((d) => d.approver)
  const n = card.quorum?.n ?? 1
  const count = tally(
    n,
    standing.map((d) => ({ author: d.author, optionKind: d.optionKind })),
    (key) => ({ person: standing.find((d) => d.author === key)?.person, approver: true }),
  )
  let outcome: AuditCard['outcome'] =
    count.state === 'allowed' ? 'allowed' : count.state === 'rejected' ? 'rejected' : 'open'
  if (timedOut && outcome === 'open') outcome = 'timed out'
  if (wentOn && outcome === 'open') {
    outcome = 'answered'
    if (decisions.some((d) => !d.approver) && count.allowedBy.length === 0)
      flags.push({
        code: 'non-approver-counted',
        event: event.id,
        message: `"${card.title}" was answered on a decision by a key that may not approve under the policy in force`,
      })
    else if (card.quorum !== undefined)
      flags.push({
        code: 'quorum-short',
        event: event.id,
        message: `"${card.title}" went on with ${count.allowedBy.length} of ${n} people allowing it`,
      })
    else
      flags.push({
        code: 'non-approver-counted',
        event: event.id,
        message: `"${card.title}" was answered with no decision from anyone who may approve`,
      })
  }
  // The decision that settled it: made under a policy other than the one the card was asked under.
  if (outcome === 'allowed' || outcome === 'rejected') {
    const settled = settlingDecision(standing, n, count.state)
    const then = settled === undefined ? undefined : policyAt(policies, card.agent, settled.at, v)
    if (settled !== undefined && then?.id !== inForce?.id)
      flags.push({
        code: 'policy-changed',
        event: event.id,
        message: `"${card.title}" was decided after the agent's policy changed (asked under ${inForce?.id.slice(0, 8) ?? 'none'}, decided under ${then?.id.slice(0, 8) ?? 'none'})`,
      })
  }
  return {
    id: event.id,
    toolKind: card.toolKind,
    title: card.title,
    input: card.input,
    policy: card.policy,
    policyInForce: inForce?.id,
    quorum: card.quorum,
    decisions,
    outcome,
    at: event.created_at,
  }
}

/** The standing decision that made the tally's result (the Nth person's allow, or the reject). */
function settlingDecision(
  standing: readonly AuditDecision[],
  n: number,
  state: string,
): AuditDecision | undefined {
  const seen = new Set<string>()
  for (const d of standing) {
    if (state === 'rejected' && d.optionKind?.startsWith('reject') === true) return d
    if (d.optionKind?.startsWith('allow') !== true || d.person === undefined) continue
    seen.add(d.person)
    if (seen.size >= n) return d
  }
  return undefined
}

/** Whether `key` could take a card decision of `optionKind` on `agent` at `at`, under `policy`. */
function mayDecide(
  v: GrantVerifier,
  key: string,
  agent: string,
  at: number,
  policy: AgentPolicyEvent | undefined,
  optionKind: string | undefined,
): boolean {
  const person = personAt(v, key, at)
  return mayAct(
    decisionAction(optionKind),
    agentActorClasses({
      key,
      person,
      agentOwner: personAt(v, agent, at),
      agentKey: agent,
      allow: policy?.allow,
      approvers: policy?.approvers,
    }),
  )
}

/** The person of `key` as its grants stood at `at` (history: revoked since still counts). */
function personAt(v: GrantVerifier, key: string, at: number): string | undefined {
  if (key === v.founder) return key
  const chain = v.validChains(key, at, at)[0]
  if (chain === undefined) return undefined
  return chain.findLast((g) => g.role === 'owner')?.subject ?? v.founder
}

function iso(at: number): string {
  return new Date(at * 1000).toISOString()
}
