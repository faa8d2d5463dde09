import type { PermissionOption } from '../events/permission-request.js'
import { agentActor, decisionAction, mayAct, type AgentStanding } from './authority.js'
import { personOf } from './members.js'
import type { GrantVerifier } from './verifier.js'

/**
 * Two-person approval (kith-agents, "Quorum"): a card of a tool kind its agent's policy names
 * runs only after approvers who are N distinct *people* allowed it. Two devices of one person
 * count once; any approver's reject ends it. The hosting node, `kith chat`, `kith permit`, the
 * web app and the service worker all count through `tally`, so every surface says the same.
 */

/** A decision on a quorum card, as the tally sees it. */
export interface QuorumVote {
  /** The deciding key (a device). */
  author: string
  /** ACP kind of the option it chose (allow_once, reject_once, …); undefined: none of the card's. */
  optionKind: string | undefined
}

/** What the tally needs to know of a deciding key: its person, and whether it may approve. */
export interface VoterStanding {
  /** undefined: not a member (its vote never counts). */
  person: string | undefined
  /** Whether the key may approve under the policy in force. */
  approver: boolean
}

export interface Tally {
  n: number
  /** The people whose allow counted, in the order they first allowed. */
  allowedBy: string[]
  /** The key whose reject ended it, when one did. */
  rejectedBy?: string
  state: 'allowed' | 'rejected' | 'waiting'
}

const isAllow = (kind: string | undefined) => kind === 'allow_once' || kind === 'allow_always'
const isReject = (kind: string | undefined) => kind === 'reject_once' || kind === 'reject_always'

/**
 * The tally of `votes` (in the order they came) for a card needing `n` people. Votes of keys
 * that may not approve, or name no option, count for nothing. The first approver's reject ends
 * it (rejected); else it is allowed once `n` distinct people allowed.
 */
export function tally(
  n: number,
  votes: readonly QuorumVote[],
  standing: (key: string) => VoterStanding,
): Tally {
  const allowedBy: string[] = []
  for (const vote of votes) {
    const who = standing(vote.author)
    if (!who.approver || who.person === undefined) continue
    if (isReject(vote.optionKind))
      return { n, allowedBy, rejectedBy: vote.author, state: 'rejected' }
    if (!isAllow(vote.optionKind) || allowedBy.includes(who.person)) continue
    allowedBy.push(who.person)
    if (allowedBy.length >= n) return { n, allowedBy, state: 'allowed' }
  }
  return { n, allowedBy, state: 'waiting' }
}

/**
 * The options a quorum card offers: an `*_always` option is dropped where its `*_once` exists,
 * since "always" would let the agent's next such call run on one person's word.
 */
export function quorumOptions<T extends Pick<PermissionOption, 'kind'>>(
  options: readonly T[],
): T[] {
  const kinds = new Set(options.map((o) => o.kind))
  return options.filter(
    (o) =>
      !(o.kind === 'allow_always' && kinds.has('allow_once')) &&
      !(o.kind === 'reject_always' && kinds.has('reject_once')),
  )
}

/** The tally in words: "1 of 2 — waiting for another approver". */
export function tallyText(t: Pick<Tally, 'n' | 'allowedBy' | 'state'>): string {
  const got = Math.min(t.allowedBy.length, t.n)
  if (t.state === 'rejected') return `rejected (${got} of ${t.n} had allowed)`
  if (t.state === 'allowed') return `${got} of ${t.n} — allowed`
  const left = t.n - got
  return `${got} of ${t.n} — waiting for ${left === 1 ? 'another approver' : `${left} more approvers`}`
}

/**
 * How the fleet's grants and the agent's policy in force stand each deciding key at `now`: its
 * person, and whether the authority table lets it decide on the agent's cards. The hosting node,
 * a reader of the card and an auditor ask this, never their own idea of "approver".
 */
export function voterStanding(
  v: GrantVerifier,
  now: number,
  agent: AgentStanding,
): (key: string) => VoterStanding {
  return (key) => ({
    person: personOf(v, key, now),
    approver: mayAct(decisionAction('allow_once'), agentActor(v, key, now, agent)),
  })
}
