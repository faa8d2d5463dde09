import { Kind } from '../events/kinds.js'
import { personOf } from './members.js'
import { policyAllows, type AgentPolicy, type PolicySubject } from './policy.js'
import type { GrantVerifier } from './verifier.js'

/**
 * Who may take which action on the wire: the one table (kith-fleet, "Authority"). Every kind, and
 * every tag that changes what a kind does, is a row; every kind of actor is a column. Handlers
 * ask `mayAct` instead of deciding "who" themselves, and nips/kith-fleet.md shows this table as
 * `scripts/authority-table.js` generates it.
 */

/**
 * The kinds of actor, as seen from the thing acted on (an agent, a channel, the fleet, a
 * person's own state). One key may be several at once (an owner who is also an admin); it may
 * act when any of them may (`mayAct`). `removed` and `stranger` are never combined with others.
 */
export const actorClasses = [
  'owner',
  'allowed',
  'approver',
  'admin',
  'founder',
  'agent',
  'member',
  'hub',
  'removed',
  'stranger',
] as const
export type ActorClass = (typeof actorClasses)[number]

export const actorDescriptions: Record<ActorClass, string> = {
  owner:
    "the agent's owner, any of their devices (for a person's own profile, presence or push subscription: that person)",
  allowed: "a key or person on the agent's --allow list (every member when it is fleet)",
  approver: "a key or person on the agent's --approvers list (every member when it is fleet)",
  admin: 'an admin: a person granted as owner with deleg',
  founder: 'the founder (the fleet key)',
  agent: 'the agent itself (its own key), for what it says about its own work',
  member:
    "any member, such as another person's device with no other standing toward the thing acted on",
  hub: 'a hub key (founder-admitted, replicates and authenticates, signs nothing else)',
  removed: 'a removed person: every grant of the key revoked or expired',
  stranger: 'a key that was never a member of the fleet',
}

/** Every action on the wire. */
export const actions = [
  'profile',
  'chat.post',
  'agent.prompt',
  'agent.broadcast',
  'agent.interrupt',
  'session.start.project',
  'session.start.worktree',
  'session.start.mode',
  'session.start.model',
  'session.set',
  'session.close',
  'session.state',
  'agent.policy',
  'agent.cancel',
  'card.request',
  'card.decide.allow_once',
  'card.decide.allow_always',
  'card.decide.reject_once',
  'card.decide.reject_always',
  'observer.frame',
  'grant.owner',
  'grant.admin',
  'grant.device',
  'grant.agent',
  'grant.hub',
  'revocation',
  'channel.define',
  'channel.define.in-use',
  'fleet.setting',
  'e2e.envelope',
  'push.sender',
  'push.subscription',
  'presence',
  'pairing',
  'client.auth',
] as const
export type Action = (typeof actions)[number]

/** Where a rule is enforced: the hub's and node's admission, the hosting node, the notifier. */
export type Enforcer = 'admission' | 'host' | 'notifier' | 'reader' | 'lane'

export interface AuthorityRow {
  action: Action
  kind: number
  /** The tag or content that makes the event this action, when the kind alone does not. */
  marker?: string
  what: string
  /** Who may take it. Anyone else is refused. */
  allow: readonly ActorClass[]
  enforcedBy: readonly Enforcer[]
  /** Why this rule, for the spec (what a reviewer would ask). */
  why: string
}

const everyMember: readonly ActorClass[] = [
  'owner',
  'allowed',
  'approver',
  'admin',
  'founder',
  'agent',
  'member',
]
const people: readonly ActorClass[] = ['owner', 'allowed', 'approver', 'admin', 'founder', 'member']
const usesAgent: readonly ActorClass[] = ['owner', 'allowed']
const runsAgent: readonly ActorClass[] = ['owner', 'approver']

/** The table. Order is the spec's. */
export const authorityTable: readonly AuthorityRow[] = [
  {
    action: 'profile',
    kind: Kind.Profile,
    what: 'a profile (name, picture) for the key that signs it',
    allow: everyMember,
    enforcedBy: ['admission'],
    why: 'a member speaks for its own key only; a hub key signs nothing but AUTH',
  },
  {
    action: 'chat.post',
    kind: Kind.ChatMessage,
    what: 'a chat message in a channel (open, or private with the author a member)',
    allow: everyMember,
    enforcedBy: ['admission'],
    why: "a private channel's membership is checked as well (kith-channels)",
  },
  {
    action: 'agent.prompt',
    kind: Kind.ChatMessage,
    marker: 'p = a hosted agent',
    what: 'a prompt to an agent: it runs a turn on its host',
    allow: usesAgent,
    enforcedBy: ['host'],
    why: 'the --allow policy says who may make the agent work; a turn still asks before tools',
  },
  {
    action: 'agent.broadcast',
    kind: Kind.ChatMessage,
    marker: 'one prompt per agent (kith broadcast)',
    what: 'the same prompt to several agents: each one is a prompt of its own',
    allow: usesAgent,
    enforcedBy: ['host'],
    why: 'each agent’s host applies its own --allow: a broadcast gets no more than each prompt',
  },
  {
    action: 'agent.interrupt',
    kind: Kind.ChatMessage,
    marker: '["interrupt"]',
    what: "stops the agent's running turn (named by e) and runs this prompt instead",
    allow: runsAgent,
    enforcedBy: ['host'],
    why: "stopping someone's turn is a decision about it, as a cancel is; its prompt also needs --allow (agent.prompt), or it is only queued",
  },
  {
    action: 'session.start.project',
    kind: Kind.ChatMessage,
    marker: '["project", NAME]',
    what: "starts the prompt's session in one of the host's projects (kith project add)",
    allow: usesAgent,
    enforcedBy: ['host'],
    why: 'the host chose its projects; a refusal names none of them',
  },
  {
    action: 'session.start.worktree',
    kind: Kind.ChatMessage,
    marker: '["worktree"]',
    what: 'starts the session in a new git worktree of the project (no repository hook or filter runs)',
    allow: usesAgent,
    enforcedBy: ['host'],
    why: 'bounded per agent (live sessions, worktrees: the refusal names the cap); git runs with hooks, fsmonitor and filter drivers off, so nothing an agent wrote earlier runs outside a card',
  },
  {
    action: 'session.start.mode',
    kind: Kind.ChatMessage,
    marker: '["mode", ID]',
    what: "sets the new session's mode (it may stop the agent asking before tools)",
    allow: runsAgent,
    enforcedBy: ['host'],
    why: 'the same rule as session.set: a mode decides whether tool calls are asked about, which is the approvers’ call',
  },
  {
    action: 'session.start.model',
    kind: Kind.ChatMessage,
    marker: '["model", ID]',
    what: "sets the new session's model",
    allow: runsAgent,
    enforcedBy: ['host'],
    why: 'the same rule as session.set',
  },
  {
    action: 'session.set',
    kind: Kind.SessionControl,
    marker: 'action set (and /mode, /model in a thread)',
    what: "changes a session's mode, model or config options",
    allow: runsAgent,
    enforcedBy: ['host'],
    why: 'a mode may stop the agent asking: only those who answer its questions may change it',
  },
  {
    action: 'session.close',
    kind: Kind.SessionControl,
    marker: 'action close',
    what: 'closes a session (and removes its clean worktree)',
    allow: runsAgent,
    enforcedBy: ['host'],
    why: 'ends work others may rely on',
  },
  {
    action: 'session.state',
    kind: Kind.SessionState,
    what: "a hosting node's report of an agent's session",
    allow: everyMember,
    enforcedBy: ['admission'],
    why: 'a report changes nothing anywhere; readers show who signed it',
  },
  {
    action: 'agent.policy',
    kind: Kind.AgentPolicy,
    what: "an agent's policy as its hosting node applies it (allow, approvers, permissions, quorum)",
    allow: ['owner'],
    enforcedBy: ['reader'],
    why: "only the agent's owner sets its rule: a policy signed by anyone else (another person's device, the agent itself) is refused by every reader, who judge its author at its date",
  },
  {
    action: 'agent.cancel',
    kind: Kind.AgentControl,
    marker: 'action cancel',
    what: 'cancels the named turns of an agent',
    allow: runsAgent,
    enforcedBy: ['host'],
    why: "stopping a turn is a decision about the agent's work, as approving is",
  },
  {
    action: 'card.request',
    kind: Kind.PermissionRequest,
    what: "a permission request (card) for one of the agent's tool calls",
    allow: ['agent'],
    enforcedBy: ['host', 'notifier'],
    why: 'only the agent asks for itself; people are notified only of cards of their agents or turns',
  },
  {
    action: 'card.decide.allow_once',
    kind: Kind.PermissionDecision,
    marker: 'option kind allow_once',
    what: 'runs this one tool call ("Allow" everywhere)',
    allow: runsAgent,
    enforcedBy: ['host', 'notifier'],
    why: 'the --approvers policy; a decision is bound to its fleet, channel (h), agent (p) and date, and only such a decision withdraws the notification',
  },
  {
    action: 'card.decide.allow_always',
    kind: Kind.PermissionDecision,
    marker: 'option kind allow_always',
    what: 'runs this call and lets the agent run its like without asking ("Always allow", never the default)',
    allow: runsAgent,
    enforcedBy: ['host', 'notifier'],
    why: 'an explicit, separately worded action: no surface picks it for a plain Allow',
  },
  {
    action: 'card.decide.reject_once',
    kind: Kind.PermissionDecision,
    marker: 'option kind reject_once',
    what: 'refuses this one tool call',
    allow: runsAgent,
    enforcedBy: ['host', 'notifier'],
    why: 'also a decision: a non-approver cannot answer (or hide) a card by rejecting it',
  },
  {
    action: 'card.decide.reject_always',
    kind: Kind.PermissionDecision,
    marker: 'option kind reject_always',
    what: 'refuses this call and its like from now on',
    allow: runsAgent,
    enforcedBy: ['host', 'notifier'],
    why: 'as reject_once',
  },
  {
    action: 'observer.frame',
    kind: Kind.ObserverFrame,
    what: "a turn's progress, encrypted to the prompter's devices",
    allow: everyMember,
    enforcedBy: ['admission', 'reader'],
    why: 'ephemeral, encrypted to its readers; a reader shows only frames of the agent it asked',
  },
  {
    action: 'grant.owner',
    kind: Kind.Grant,
    marker: 'role owner',
    what: 'admits a person',
    allow: ['admin', 'founder'],
    enforcedBy: ['admission'],
    why: 'only the founder or an admin invites people (kith fleet invite)',
  },
  {
    action: 'grant.admin',
    kind: Kind.Grant,
    marker: 'role owner, deleg',
    what: 'admits a person as an admin',
    allow: ['admin', 'founder'],
    enforcedBy: ['admission'],
    why: 'an admin may make admins; a grant never widens its issuer’s kinds, channels or window',
  },
  {
    action: 'grant.device',
    kind: Kind.Grant,
    marker: 'role device',
    what: 'admits a device of the issuing person',
    allow: people,
    enforcedBy: ['admission'],
    why: 'a person (their owner key) admits their own devices; a device admits no device',
  },
  {
    action: 'grant.agent',
    kind: Kind.Grant,
    marker: 'role agent',
    what: 'admits an agent key under the issuer',
    allow: people,
    enforcedBy: ['admission'],
    why: 'a person, or their device holding deleg; the agent is that person’s',
  },
  {
    action: 'grant.hub',
    kind: Kind.Grant,
    marker: 'role hub',
    what: 'admits a hub key (it reads every channel to replicate it)',
    allow: ['founder'],
    enforcedBy: ['admission'],
    why: 'a hub key reads private channels: only the founder admits one',
  },
  {
    action: 'revocation',
    kind: Kind.Revocation,
    what: 'ends grants: those the revoker stands above on their chain',
    allow: people,
    enforcedBy: ['admission'],
    why: 'the founder ends any grant; anyone else only grants beneath them (their devices, agents, invitees). A hub key cannot revoke, and a hub\'s "restricted: revoked" at AUTH is not a revocation: a device retires nothing until its own grant book holds one (judgeHubRevoked)',
  },
  {
    action: 'channel.define',
    kind: Kind.ChannelDefinition,
    what: 'defines a channel nobody else uses yet, or changes one the author created',
    allow: people,
    enforcedBy: ['admission'],
    why: 'a person may make their own private channels',
  },
  {
    action: 'channel.define.in-use',
    kind: Kind.ChannelDefinition,
    marker: 'a channel others already posted in',
    what: 'defines (or makes private) a channel others already use',
    allow: ['admin', 'founder'],
    enforcedBy: ['admission'],
    why: "a plain owner may not take over a channel others use: a plain definition is taken only if it leaves out no one who posted there, at any date (a date is its signer's word), so a back-dated one cannot hide a poster's history or refuse their posts",
  },
  {
    action: 'fleet.setting',
    kind: Kind.FleetSetting,
    what: 'whether the fleet seals its channels end to end',
    allow: ['admin', 'founder'],
    enforcedBy: ['admission', 'reader'],
    why: 'a fleet-wide choice; a setting by anyone else is refused, and decides nothing where it was kept before (readers judge its author at its date)',
  },
  {
    action: 'e2e.envelope',
    kind: Kind.KeyEnvelope,
    what: 'an epoch key for one member key of a channel',
    allow: everyMember,
    enforcedBy: ['admission', 'reader'],
    why: 'its signer must be a member of the channel when it signed; readers check',
  },
  {
    action: 'push.sender',
    kind: Kind.PushSender,
    what: "a node's Web Push (VAPID) key",
    allow: everyMember,
    enforcedBy: ['admission'],
    why: 'a device announces its own sender; subscriptions are sealed to it',
  },
  {
    action: 'push.subscription',
    kind: Kind.PushSubscription,
    what: "a web device's push subscription, sealed to a node",
    allow: ['owner'],
    enforcedBy: ['admission', 'notifier'],
    why: "a subscription goes only to a node of the device's own person (the sender, p, and the device belong to one person at its date): another person's device is refused at admission (not-owner), and the notifier asks the same rule again",
  },
  {
    action: 'presence',
    kind: Kind.Presence,
    what: "a device's presence",
    allow: everyMember,
    enforcedBy: ['admission'],
    why: 'ephemeral; says only that the key is online',
  },
  {
    action: 'pairing',
    kind: Kind.Pairing,
    what: 'a pairing lane message (kith-pair/1)',
    allow: [...everyMember, 'stranger'],
    enforcedBy: ['lane'],
    why: 'the joiner is not a member yet; the lane relays between the two parties only, never stores, and the code and SAS decide',
  },
  {
    action: 'client.auth',
    kind: Kind.ClientAuth,
    what: 'NIP-42 authentication to a hub',
    allow: [...everyMember, 'hub', 'removed', 'stranger'],
    enforcedBy: ['admission'],
    why: 'anyone may say who they are; what they may then read or post is decided per event',
  },
]

const rows = new Map(authorityTable.map((r) => [r.action, r]))

export function authorityRow(action: Action): AuthorityRow {
  const row = rows.get(action)
  if (row === undefined) throw new Error(`no authority row for ${action}`)
  return row
}

/** Whether an actor holding `classes` may take `action`: any one of them suffices. */
export function mayAct(action: Action, classes: readonly ActorClass[] | ActorClass): boolean {
  const allow = authorityRow(action).allow
  const held = typeof classes === 'string' ? [classes] : classes
  if (held.includes('removed') || held.includes('stranger'))
    return held.every((c) => allow.includes(c))
  return held.some((c) => allow.includes(c))
}

/** What the host knows of a key acting on one of its agents. */
export interface AgentActorFacts {
  key: string
  /** Its person now; undefined: not a member now. */
  person: string | undefined
  /** Whether the key was ever a member (grants known, all revoked or expired). */
  wasMember?: boolean
  /** The agent's owner (the hosting node's person). */
  agentOwner: string | undefined
  agentKey: string
  allow: AgentPolicy | undefined
  approvers: AgentPolicy | undefined
  admin?: boolean
  founder?: boolean
  hub?: boolean
}

/** The classes a key holds toward an agent, from its policies and the key's standing. */
export function agentActorClasses(f: AgentActorFacts): ActorClass[] {
  if (f.hub === true) return ['hub']
  if (f.person === undefined) return [f.wasMember === true ? 'removed' : 'stranger']
  // The agent's own key belongs to its owner, but it is not its owner: it only asks.
  if (f.key === f.agentKey) return ['agent', 'member']
  const who: PolicySubject = { key: f.key, person: f.person }
  const out: ActorClass[] = ['member']
  if (f.agentOwner !== undefined && f.person === f.agentOwner) out.push('owner')
  if (policyAllows(f.allow, who, f.agentOwner)) out.push('allowed')
  if (policyAllows(f.approvers, who, f.agentOwner)) out.push('approver')
  if (f.founder === true) out.push('founder')
  if (f.admin === true) out.push('admin')
  return [...new Set(out)]
}

/** The action a decision is, by the kind of the option it chose (unknown kinds: the widest). */
export function decisionAction(optionKind: string | undefined): Action {
  switch (optionKind) {
    case 'allow_once':
      return 'card.decide.allow_once'
    case 'reject_once':
      return 'card.decide.reject_once'
    case 'reject_always':
      return 'card.decide.reject_always'
    default:
      return 'card.decide.allow_always'
  }
}

/** An agent as the authority table sees it: its key, its owner and its two policies. */
export interface AgentStanding {
  key: string
  owner: string | undefined
  allow: AgentPolicy | undefined
  approvers: AgentPolicy | undefined
}

/** The classes `key` holds toward `agent` now, read from the fleet's grants. */
export function agentActor(
  v: GrantVerifier,
  key: string,
  now: number,
  agent: AgentStanding,
): ActorClass[] {
  const d = v.isMember(key, now)
  const chains = d.ok ? v.validChains(key, now) : []
  return agentActorClasses({
    key,
    person: personOf(v, key, now),
    wasMember: v.grantsOf(key).length > 0,
    agentOwner: agent.owner,
    agentKey: agent.key,
    allow: agent.allow,
    approvers: agent.approvers,
    founder: key === v.founder,
    hub: d.ok && d.role === 'hub',
    admin: chains.some((c) => c.at(-1)?.role === 'owner' && c.at(-1)?.deleg === true),
  })
}

/** Whether `key` may take `action` on `agent` now: the one question every host asks. */
export function mayActOnAgent(
  v: GrantVerifier,
  key: string,
  now: number,
  agent: AgentStanding,
  action: Action,
): boolean {
  return mayAct(action, agentActor(v, key, now, agent))
}

export const authorityTableStart =
  '<!-- authority-table: generated by scripts/authority-table.js from src/grants/authority.ts; do not edit -->'
export const authorityTableEnd = '<!-- /authority-table -->'

const shortName: Record<ActorClass, string> = {
  owner: 'owner',
  allowed: 'allow',
  approver: 'appr',
  admin: 'admin',
  founder: 'fndr',
  agent: 'agent',
  member: 'member',
  hub: 'hub',
  removed: 'removed',
  stranger: 'stranger',
}

/** The table as nips/kith-fleet.md shows it (between its markers), from the rows above. */
export function authorityMarkdown(): string {
  const kindName = new Map(Object.entries(Kind).map(([name, kind]) => [kind as number, name]))
  const head = `| action | kind | marker | ${actorClasses.map((c) => shortName[c]).join(' | ')} | enforced by |`
  const rule = `| --- | --- | --- | ${actorClasses.map(() => ':-:').join(' | ')} | --- |`
  const lines = authorityTable.map(
    (r) =>
      `| \`${r.action}\` | ${r.kind} ${kindName.get(r.kind) ?? ''} | ${r.marker ?? ''} | ${actorClasses.map((c) => (r.allow.includes(c) ? 'yes' : '·')).join(' | ')} | ${r.enforcedBy.join(', ')} |`,
  )
  const columns = actorClasses.map((c) => `- **${shortName[c]}**: ${actorDescriptions[c]}.`)
  const why = authorityTable.map((r) => `- \`${r.action}\` (${r.what}): ${r.why}.`)
  return [
    authorityTableStart,
    '<!-- prettier-ignore-start -->',
    '',
    ...columns,
    '',
    head,
    rule,
    ...lines,
    '',
    ...why,
    '',
    '<!-- prettier-ignore-end -->',
    authorityTableEnd,
  ].join('\n')
}
