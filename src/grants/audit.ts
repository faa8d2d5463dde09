import { KithError } from '../errors.js'
import type { AgentPolicyEvent, Quorum } from '../events/agent-policy.js'
import type { Epoch } from '../events/e2e-epoch.js'
import { quorumApplies } from '../events/agent-policy.js'
import { channelOf, saysTurnGoesOn } from '../events/chat.js'
import { isSealed } from '../events/e2e-seal.js'
import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { decisionRefusal, parsePermissionDecision } from '../events/permission-decision.js'
import { parsePermissionRequest, type PermissionRequest } from '../events/permission-request.js'
import { parseSessionStart, type SessionStart } from '../events/session-start.js'
import { workOf, type WorkTool } from '../events/turn-work.js'
import { policyAt, policyRefusal } from './agent-policy-standing.js'
import { openedWith } from './audit-export.js'
import {
  agentActorClasses,
  decisionAction,
  mayAct,
  type Action,
  type AgentStanding,
} from './authority.js'
import type { Grant } from './grant.js'
import { tally, type Tally } from './quorum.js'
import { GrantVerifier } from './verifier.js'

/**
 * `kith audit` (kith-agents, "Audit"): a fleet's history checked offline against the rules it
 * was judged by. Pure: signed events in, a report out. Per agent turn it tells who prompted (the
 * person and device, and the grant chain that let them, at that time), each card with what it
 * asked and the policy it was asked under, each decision with whether its author could approve
 * under the policy in force, what ran and how it ended; and it flags what the rules did not
 * allow. It trusts no hub and no node: grants, policies and decisions are all judged here, from
 * the events themselves, by the same rules the host uses (authority.ts, quorum.ts,
 * agent-policy-standing.ts).
 */

/** What a flag says happened; stable codes for scripts (kith-agents, "Audit"). */
export type AuditFlagCode =
  /** An event whose signature does not check (left out of everything else). */
  | 'bad-signature'
  /** An agent answered a prompt whose author its policy did not allow. */
  | 'prompt-not-allowed'
  /** A session start with a mode or model by a key that may not set them (approvers). */
  | 'start-not-approver'
  /** A card's tool ran on decisions of keys that were not approvers under the policy in force. */
  | 'non-approver-decision'
  /** A quorum card's tool ran before enough distinct people allowed it. */
  | 'quorum-short'
  /** A card's tool ran with no allow at all, or after an approver rejected it. */
  | 'ran-unapproved'
  /** A tool that changes things ran with no card while the policy said to ask. */
  | 'ran-without-card'
  /** The host allowed a tool by its own policy where the policy in force did not allow it. */
  | 'auto-allowed-against-policy'
  /** A decision that counted was made after the agent's policy changed from the card's. */
  | 'answered-after-policy-change'
  /** A card names a policy that was not the one in force when it was made. */
  | 'card-policy-mismatch'
  /** A kind-34151 policy that does not count (forged, or by someone not the agent's owner). */
  | 'policy-refused'

export interface AuditFlag {
  code: AuditFlagCode
  /** The event the flag is about. */
  event: string
  /** The turn (its prompt's id), when the flag is about one. */
  turn?: string
  text: string
}

/** A key as the report names it: the key, its person then, and its grant's display name. */
export interface AuditKey {
  key: string
  person: string | undefined
  name: string | undefined
  /** The display name of its person's grant. */
  personName: string | undefined
}

export interface AuditDecision {
  id: string
  at: number
  by: AuditKey
  optionId: string
  /** ACP kind of the chosen option (allow_once, reject_once, …); undefined: none of the card's. */
  optionKind: string | undefined
  /**
   * Whether its author could make this decision under the policy in force at its date;
   * undefined when no policy was on record (not checked).
   */
  approver: boolean | undefined
  /** Why it answers nothing (not bound to the card), when it does not. */
  unbound?: string
}

export interface AuditCard {
  id: string
  at: number
  toolCallId: string
  toolKind: string
  title: string
  /** Hex SHA-256 of the call's input, as the card carries it. */
  input: string
  /** The policy version (34151 id) the card says it was judged under. */
  policy: string | undefined
  /** The quorum the policy in force asked of this card, if any. */
  quorum: Quorum | undefined
  decisions: AuditDecision[]
  /** The tally of the decisions that bind, by the rule the host uses. */
  tally: Pick<Tally, 'n' | 'allowedBy' | 'state'>
  /** Its tool's last status in the turn's answer; undefined: the answer does not say. */
  ran: string | undefined
}

export interface AuditPolicy {
  id: string
  at: number
  allow: AgentPolicyEvent['allow']
  approvers: AgentPolicyEvent['approvers']
  permissions: AgentPolicyEvent['permissions']
  quorum?: Quorum
}

export interface AuditTurn {
  /** The prompt's id. */
  id: string
  agent: AuditKey
  channel: string | undefined
  at: number
  prompter: AuditKey & {
    /** Grant ids from the founder down to the prompter's own, valid at the prompt's date. */
    chain: string[]
    /** Whether the policy in force let the prompter prompt this agent; undefined: no policy. */
    allowed: boolean | undefined
  }
  start: SessionStart | undefined
  /** The agent's policy in force at the prompt; undefined: none on record (checks skipped). */
  policy: AuditPolicy | undefined
  cards: AuditCard[]
  /** What the answer says ran (its `work` tags). */
  tools: WorkTool[]
  /** answered, refused, failed, cancelled (the answer's outcome), or `open` with no answer yet. */
  outcome: string
  answeredAt: number | undefined
  seconds: number | undefined
}

export interface AuditReport {
  fleet: string
  /** Events read, and those left out: signatures that fail, sealed ones no key here opens. */
  counts: {
    events: number
    turns: number
    cards: number
    decisions: number
    policies: number
    badSignatures: number
    sealed: number
    /** Events taken as their source vouched (opened sealed events of a node's store). */
    vouched: number
    /** Sealed events whose signature checked and that a key given (`keyOf`) opened. */
    opened: number
  }
  turns: AuditTurn[]
  flags: AuditFlag[]
  /** Checks that could not be made, and why (no policy on record, events still sealed). */
  notes: string[]
}

export interface AuditSource {
  /** The founder's key. */
  fleet: string
  events: readonly NostrEvent[]
  /**
   * Events whose signature cannot be checked here but whose source checked them on arrival: a
   * node keeps a sealed event opened under its sealed form's id and signature.
   */
  vouched?: (event: NostrEvent) => boolean
  /**
   * Epoch keys that open sealed events (kith-e2e/1): a device's own, or those an export
   * discloses (audit-export.ts). Each sealed event is opened only after its signature checked.
   */
  keyOf?: (epochId: string) => Epoch | undefined
  /** Checks a signature (events/event.ts verifyEventSignature, or a native verifier). */
  verifySignature: (event: NostrEvent) => boolean
  /** Display names as the reader knows them (profiles); else the grants' names. */
  nameOf?: (key: string) => string | undefined
}

/** Tool kinds that change nothing: running one without a card is not flagged. */
const readOnlyKinds: ReadonlySet<string> = new Set(['read', 'search', 'think'])

/** The audit of `source`'s events. */
export function audit(source: AuditSource): AuditReport {
  const { fleet } = source
  const flags: AuditFlag[] = []
  const notes: string[] = []
  let badSignatures = 0
  let vouched = 0
  let opened = 0
  const events: NostrEvent[] = []
  const seen = new Set<string>()
  for (const e of source.events) {
    if (seen.has(e.id)) continue
    seen.add(e.id)
    if (source.verifySignature(e)) {
      // Opened after its signature checked: the signature is over the sealed form.
      const o = openedWith(e, source.keyOf)
      if (o !== e) opened++
      events.push(o)
    } else if (source.vouched?.(e) === true) {
      vouched++
      events.push(e)
    } else {
      badSignatures++
      flags.push({
        code: 'bad-signature',
        event: e.id,
        text: `kind ${e.kind} by ${short(e.pubkey)}: its signature does not check; left out`,
      })
    }
  }
  const v = new GrantVerifier({ founder: fleet, verifySignature: () => true })
  for (const e of events.filter((x) => x.kind === Kind.Grant || x.kind === Kind.Revocation))
    v.add(e, { verified: true, keepPending: true })
  const names = new Map<string, string>()
  for (const g of [...v.allGrants()].sort((a, b) => a.createdAt - b.createdAt))
    if (g.name !== undefined) names.set(g.subject, g.name)
  const keyAt = (key: string, at: number): AuditKey => {
    const person = personAt(v, key, at)
    return {
      key,
      person,
      name: source.nameOf?.(key) ?? names.get(key),
      personName: person === undefined ? undefined : (source.nameOf?.(person) ?? names.get(person)),
    }
  }

  const policies = events.filter((e) => e.kind === Kind.AgentPolicy)
  for (const p of policies) {
    const why = policyRefusal(p, v)
    if (why !== undefined)
      flags.push({
        code: 'policy-refused',
        event: p.id,
        text: `a policy that does not count: ${why}`,
      })
  }
  const agents = new Set(
    v
      .allGrants()
      .filter((g) => g.role === 'agent')
      .map((g) => g.subject),
  )
  const sealed = events.filter(isSealed).length
  if (sealed > 0)
    notes.push(
      `${sealed} sealed event${sealed === 1 ? '' : 's'} could not be read here (no key): the turns, cards and decisions they hold are not in this report; grants, revocations and policies were checked`,
    )
  const readable = events.filter((e) => !isSealed(e))

  const cards = new Map<string, PermissionRequest>()
  for (const e of readable.filter((x) => x.kind === Kind.PermissionRequest)) {
    try {
      const c = parsePermissionRequest(e)
      if (agents.has(c.agent)) cards.set(c.id, c)
    } catch (err) {
      if (!(err instanceof KithError)) throw err
      notes.push(`card ${short(e.id)} is not readable (${err.message})`)
    }
  }
  const decisionsOf = new Map<string, NostrEvent[]>()
  for (const e of readable.filter((x) => x.kind === Kind.PermissionDecision)) {
    const request = e.tags.find((t) => t[0] === 'e')?.[1]
    if (request === undefined) continue
    decisionsOf.set(request, [...(decisionsOf.get(request) ?? []), e])
  }
  const answers = new Map<string, NostrEvent>()
  for (const e of readable.filter((x) => x.kind === Kind.ChatMessage && agents.has(x.pubkey))) {
    const replyTo =
      e.tags.find((t) => t[0] === 'e' && t[3] === 'reply')?.[1] ??
      e.tags.find((t) => t[0] === 'e' && t[3] === 'root')?.[1]
    if (replyTo === undefined) continue
    // A notice that says the turn goes on (an interrupt refused, a card still open) is no answer.
    if (saysTurnGoesOn(e)) continue
    const key = `${e.pubkey}:${replyTo}`
    const before = answers.get(key)
    // The turn's answer is the agent's first reply to it (later ones are its own notices).
    if (before === undefined || e.created_at < before.created_at) answers.set(key, e)
  }

  const turns: AuditTurn[] = []
  let unknownPolicy = 0
  const prompts = readable
    .filter((e) => e.kind === Kind.ChatMessage && !agents.has(e.pubkey))
    .sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : 1))
  for (const prompt of prompts) {
    const named = new Set(
      prompt.tags.filter((t) => t[0] === 'p' && agents.has(t[1] ?? '')).map((t) => t[1]!),
    )
    for (const agent of named) {
      const answer = answers.get(`${agent}:${prompt.id}`)
      const turnCards = [...cards.values()]
        .filter((c) => c.agent === agent && c.prompt === prompt.id)
        .sort((a, b) => a.createdAt - b.createdAt)
      // Only prompts the agent acted on are turns (a mention in passing asks nothing).
      if (answer === undefined && turnCards.length === 0) continue
      const at = prompt.created_at
      const policyEvent = policyAt(policies, agent, at, v)
      if (policyEvent === undefined) unknownPolicy++
      const standingAt = (t: number): AgentStanding | undefined => {
        const p = policyAt(policies, agent, t, v)
        return p === undefined
          ? undefined
          : { key: agent, owner: ownerAt(v, agent, t), allow: p.allow, approvers: p.approvers }
      }
      const may = (key: string, t: number, action: Action): boolean | undefined => {
        const standing = standingAt(t)
        if (standing === undefined) return undefined
        const classes = agentActorClasses({
          key,
          person: personAt(v, key, t),
          wasMember: v.grantsOf(key).length > 0,
          agentOwner: standing.owner,
          agentKey: agent,
          allow: standing.allow,
          approvers: standing.approvers,
        })
        return mayAct(action, classes)
      }
      let start: SessionStart | undefined
      try {
        start = parseSessionStart(prompt)
      } catch (err) {
        if (!(err instanceof KithError)) throw err
      }
      const outcome =
        answer === undefined
          ? 'open'
          : (answer.tags.find((t) => t[0] === 'outcome')?.[1] ?? 'answered')
      const acted = outcome === 'answered' || outcome === 'failed' || outcome === 'cancelled'
      const tools = answer === undefined ? [] : workOf(answer).tools
      const allowed = may(prompt.pubkey, at, 'agent.prompt')
      if (allowed === false && (acted || turnCards.length > 0))
        flags.push({
          code: 'prompt-not-allowed',
          event: prompt.id,
          turn: prompt.id,
          text: `${who(keyAt(prompt.pubkey, at))} prompted ${who(keyAt(agent, at))}, whose policy did not allow them, and it ${turnCards.length > 0 ? 'asked to run tools' : 'answered'}`,
        })
      if (start !== undefined && (start.mode !== undefined || start.model !== undefined)) {
        const action: Action =
          start.mode !== undefined ? 'session.start.mode' : 'session.start.model'
        if (may(prompt.pubkey, at, action) === false && acted)
          flags.push({
            code: 'start-not-approver',
            event: prompt.id,
            turn: prompt.id,
            text: `${who(keyAt(prompt.pubkey, at))} started a session with ${start.mode !== undefined ? `mode ${start.mode}` : `model ${start.model}`}, which only approvers may set, and it ran`,
          })
      }
      const auditCards = turnCards.map((card) =>
        auditCard(card, {
          fleet,
          decisions: decisionsOf.get(card.id) ?? [],
          tools,
          policyAtCard: policyAt(policies, agent, card.createdAt, v),
          policyAtTime: (t) => policyAt(policies, agent, t, v),
          may,
          keyAt,
          flags,
          turn: prompt.id,
        }),
      )
      const carded = new Set(turnCards.map((c) => c.toolCallId))
      if (policyEvent !== undefined)
        for (const tool of tools) {
          if (carded.has(tool.id) || !ran(tool.status)) continue
          if (tool.allowedBy === undefined) {
            if (policyEvent.permissions !== 'allow-all' && !readOnlyKinds.has(tool.kind))
              flags.push({
                code: 'ran-without-card',
                event: answer!.id,
                turn: prompt.id,
                text: `${tool.kind} "${tool.title}" ran with no card while the policy said ${policyEvent.permissions}`,
              })
          } else if (!policyLetsRun(policyEvent, tool.kind))
            flags.push({
              code: 'auto-allowed-against-policy',
              event: answer!.id,
              turn: prompt.id,
              text: `${tool.kind} "${tool.title}" was allowed by the host's ${tool.allowedBy}, but the policy in force said ${policyEvent.permissions}${quorumApplies(policyEvent.quorum, tool.kind) ? ` and a quorum of ${policyEvent.quorum!.n}` : ''}`,
            })
        }
      turns.push({
        id: prompt.id,
        agent: keyAt(agent, at),
        channel: channelOf(prompt),
        at,
        prompter: {
          ...keyAt(prompt.pubkey, at),
          chain: chainAt(v, prompt.pubkey, at),
          allowed,
        },
        start,
        policy: policyEvent === undefined ? undefined : policyOf(policyEvent),
        cards: auditCards,
        tools,
        outcome,
        answeredAt: answer?.created_at,
        seconds: answer === undefined ? undefined : answer.created_at - at,
      })
    }
  }
  // "Nothing flagged" over no turn at all is no pass: an export of a sealed fleet's node, for
  // one, holds its grants and policies but none of the turns it opened.
  if (turns.length === 0)
    notes.push(
      'these events hold no agent turn (no prompt an agent answered or asked a card for): only grants, revocations and policies were checked',
    )
  if (unknownPolicy > 0)
    notes.push(
      `${unknownPolicy} turn${unknownPolicy === 1 ? '' : 's'} had no agent policy (kind 34151) on record: who could prompt and approve was not checked for ${unknownPolicy === 1 ? 'it' : 'them'}`,
    )
  return {
    fleet,
    counts: {
      events: events.length,
      turns: turns.length,
      cards: turns.reduce((n, t) => n + t.cards.length, 0),
      decisions: turns.reduce((n, t) => n + t.cards.reduce((m, c) => m + c.decisions.length, 0), 0),
      policies: policies.length,
      badSignatures,
      sealed,
      vouched,
      opened,
    },
    turns,
    flags,
    notes,
  }
}

const ran = (status: string | undefined) =>
  status === 'completed' || status === 'failed' || status === 'in_progress'

/** Whether the host's own policy could let a `kind` call run without asking under `p`. */
function policyLetsRun(p: AgentPolicyEvent, kind: string): boolean {
  if (quorumApplies(p.quorum, kind)) return false
  if (p.permissions === 'allow-all') return true
  return p.permissions === 'allow-reads' && readOnlyKinds.has(kind)
}

function policyOf(p: AgentPolicyEvent): AuditPolicy {
  return {
    id: p.id,
    at: p.createdAt,
    allow: p.allow,
    approvers: p.approvers,
    permissions: p.permissions,
    ...(p.quorum === undefined ? {} : { quorum: p.quorum }),
  }
}

function auditCard(
  card: PermissionRequest,
  ctx: {
    fleet: string
    decisions: readonly NostrEvent[]
    tools: readonly WorkTool[]
    policyAtCard: AgentPolicyEvent | undefined
    policyAtTime: (t: number) => AgentPolicyEvent | undefined
    may: (key: string, t: number, action: Action) => boolean | undefined
    keyAt: (key: string, at: number) => AuditKey
    flags: AuditFlag[]
    turn: string
  },
): AuditCard {
  const { flags } = ctx
  const policy = card.policy
  const inForce = ctx.policyAtCard
  if (policy !== undefined && inForce !== undefined && policy !== inForce.id)
    flags.push({
      code: 'card-policy-mismatch',
      event: card.id,
      turn: ctx.turn,
      text: `the card for "${card.title}" names policy ${short(policy)}, but ${short(inForce.id)} was in force when it was made`,
    })
  const quorum =
    inForce !== undefined && quorumApplies(inForce.quorum, card.toolKind)
      ? inForce.quorum
      : undefined
  const kindOf = (optionId: string) => card.options.find((o) => o.optionId === optionId)?.kind
  const decisions: AuditDecision[] = [...ctx.decisions]
    .sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : 1))
    .map((e) => {
      const unbound = decisionRefusal(e, card, { fleet: ctx.fleet })
      let optionId = ''
      try {
        optionId = parsePermissionDecision(e).optionId
      } catch (err) {
        if (!(err instanceof KithError)) throw err
      }
      const optionKind = kindOf(optionId)
      const approver = ctx.may(e.pubkey, e.created_at, decisionAction(optionKind))
      return {
        id: e.id,
        at: e.created_at,
        by: ctx.keyAt(e.pubkey, e.created_at),
        optionId,
        optionKind,
        approver,
        ...(unbound === undefined ? {} : { unbound }),
      }
    })
  const bound = decisions.filter((d) => d.unbound === undefined)
  const t = tally(
    quorum?.n ?? 1,
    bound.map((d) => ({ author: d.by.key, optionKind: d.optionKind })),
    (key) => {
      const d = bound.find((x) => x.by.key === key)!
      // No policy on record: the tally shows what was decided, unchecked (notes say so).
      return { person: d.by.person, approver: d.approver ?? true }
    },
  )
  const status = ctx.tools.find((tool) => tool.id === card.toolCallId)?.status
  if (ran(status) && inForce !== undefined && t.state !== 'allowed') {
    const allows = bound.filter(
      (d) => d.optionKind === 'allow_once' || d.optionKind === 'allow_always',
    )
    const code: AuditFlagCode =
      t.state === 'rejected'
        ? 'ran-unapproved'
        : allows.some((d) => !d.approver)
          ? 'non-approver-decision'
          : t.allowedBy.length > 0
            ? 'quorum-short'
            : 'ran-unapproved'
    const text =
      code === 'non-approver-decision'
        ? `"${card.title}" ran on the word of ${allows
            .filter((d) => !d.approver)
            .map((d) => who(d.by))
            .join(', ')}, not an approver under the policy in force`
        : code === 'quorum-short'
          ? `"${card.title}" ran with ${t.allowedBy.length} of the ${t.n} people its policy asks`
          : t.state === 'rejected'
            ? `"${card.title}" ran although an approver rejected it`
            : `"${card.title}" ran with no approver's allow`
    flags.push({ code, event: card.id, turn: ctx.turn, text })
  }
  if (t.state === 'allowed' && inForce !== undefined) {
    // The decision that completed the tally: was the rule still the card's?
    const last = bound.find(
      (d) => d.by.person === t.allowedBy.at(-1) && (d.optionKind ?? '').startsWith('allow'),
    )
    const then = last === undefined ? undefined : ctx.policyAtTime(last.at)
    if (last !== undefined && then !== undefined && then.id !== inForce.id)
      flags.push({
        code: 'answered-after-policy-change',
        event: last.id,
        turn: ctx.turn,
        text: `"${card.title}" was allowed by ${who(last.by)} after the agent's policy changed (card under ${short(inForce.id)}, answered under ${short(then.id)})`,
      })
  }
  return {
    id: card.id,
    at: card.createdAt,
    toolCallId: card.toolCallId,
    toolKind: card.toolKind,
    title: card.title,
    input: card.input,
    policy,
    quorum,
    decisions,
    tally: { n: t.n, allowedBy: t.allowedBy, state: t.state },
    ran: status,
  }
}

/** The person behind `key` when it signed at `at` (its history counts though revoked since). */
function personAt(v: GrantVerifier, key: string, at: number): string | undefined {
  if (key === v.founder) return key
  const chain = v.validChains(key, at, at)[0]
  if (chain === undefined) return undefined
  return chain.findLast((g) => g.role === 'owner')?.subject ?? v.founder
}

/** The agent's owner at `at`: the person its grant chain runs through. */
function ownerAt(v: GrantVerifier, agent: string, at: number): string | undefined {
  const chain = v.validChains(agent, at, at).find((c) => c.at(-1)?.role === 'agent')
  if (chain === undefined) return undefined
  return chain.findLast((g) => g.role === 'owner')?.subject ?? v.founder
}

function chainAt(v: GrantVerifier, key: string, at: number): string[] {
  return (v.validChains(key, at, at)[0] ?? []).map((g: Grant) => g.id)
}

const short = (hex: string) => `${hex.slice(0, 8)}…`

function who(k: AuditKey): string {
  return k.name ?? short(k.key)
}
