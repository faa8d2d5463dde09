import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { authorityRow, mayAct, type Action, type ActorClass } from './authority.js'
import type { Role } from './grant.js'
import { personsOf } from './members.js'
import type { GrantVerifier } from './verifier.js'

/**
 * Admission's side of the authority table (kith-fleet, "Authority"): which row an event is, who
 * its author is as the fleet's grants show it, and whether the table lets it in. Hubs, nodes, the
 * web app and the service worker all admit through FleetState, which asks here; what is left in
 * their handlers is binding and shape (tags, dates, bounds, a grant's caps), never "who".
 */

/** The row each kind is at admission, by its name in `Kind`: a new kind without one fails typecheck. */
const byKind: Record<keyof typeof Kind, (event: NostrEvent) => Action> = {
  Profile: () => 'profile',
  // A prompt, an interrupt or a start is a chat message to admission; its host reads the tags.
  ChatMessage: () => 'chat.post',
  Grant: grantAction,
  Revocation: () => 'revocation',
  PermissionRequest: () => 'card.request',
  // The option's kind is the card's to say (the host reads it): the widest until then.
  PermissionDecision: () => 'card.decide.allow_always',
  AgentControl: () => 'agent.cancel',
  KeyEnvelope: () => 'e2e.envelope',
  ClientAuth: () => 'client.auth',
  Pairing: () => 'pairing',
  Presence: () => 'presence',
  ObserverFrame: () => 'observer.frame',
  // Whether the channel is in use by others (channel.define.in-use) is the channel book's to see.
  ChannelDefinition: () => 'channel.define',
  PushSender: () => 'push.sender',
  PushSubscription: () => 'push.subscription',
  SessionControl: (e) => (controlAction(e) === 'close' ? 'session.close' : 'session.set'),
  SessionState: () => 'session.state',
  // Whether its author is a device of the agent's owner is its readers' to judge, at its date.
  AgentPolicy: () => 'agent.policy',
  FleetSetting: () => 'fleet.setting',
}

const kindNames = new Map<number, keyof typeof Kind>(
  (Object.entries(Kind) as [keyof typeof Kind, number][]).map(([name, kind]) => [kind, name]),
)

/**
 * The action an event is on the wire, as admission sees it. A kind Kith does not define (a plain
 * Nostr note a member's client posts) is a member's post like a chat message: `chat.post`.
 */
export function actionOf(event: Pick<NostrEvent, 'kind' | 'tags' | 'content'>): Action {
  const name = kindNames.get(event.kind)
  return name === undefined ? 'chat.post' : byKind[name](event as NostrEvent)
}

function controlAction(event: NostrEvent): unknown {
  try {
    return (JSON.parse(event.content) as { action?: unknown }).action
  } catch {
    // Unreadable: its host refuses it; to admission it is a set, the same cell as a close.
    return undefined
  }
}

/** The row of a grant by its role (and deleg: an owner grant with it makes an admin). */
export function grantAction(event: Pick<NostrEvent, 'tags'>): Action {
  const role = event.tags.find((t) => t[0] === 'role')?.[1]
  return grantRoleAction(
    role as Role,
    event.tags.some((t) => t[0] === 'deleg'),
  )
}

export function grantRoleAction(role: Role, deleg: boolean): Action {
  switch (role) {
    case 'owner':
      return deleg ? 'grant.admin' : 'grant.owner'
    case 'device':
      return 'grant.device'
    case 'hub':
      return 'grant.hub'
    default:
      return 'grant.agent'
  }
}

/**
 * The classes a key holds by the position one of its grants gives it (a chain's last grant, or
 * the founder), time aside: the founder; an admin (an owner grant with deleg) and a member; an
 * agent and a member; a hub; any other member. Used where the answer must not depend on the
 * clock (grants and revocations are accepted on structure, kith-grants "Acceptance").
 */
export function positionActor(position: { role: Role | 'founder'; deleg: boolean }): ActorClass[] {
  switch (position.role) {
    case 'founder':
      return ['founder', 'member']
    case 'hub':
      return ['hub']
    case 'agent':
      return ['agent', 'member']
    case 'owner':
      return position.deleg ? ['admin', 'member'] : ['member']
    default:
      return ['member']
  }
}

/**
 * The classes `key` holds in the fleet at `at`: one per valid chain, joined (any one lets it
 * act); `removed` for a key whose every grant is revoked or outside its window, `stranger` for a
 * key with none. Relative classes (owner, allowed, approver) are not known here: see `mayAdmit`.
 */
export function fleetActor(
  v: GrantVerifier,
  key: string,
  at: number,
  /** History: what the key signed at `at` while it stood, revoked since (verifier.authorize). */
  history = false,
): ActorClass[] {
  if (key === v.founder) return positionActor({ role: 'founder', deleg: true })
  const chains = v.validChains(key, at, history ? at : undefined)
  if (chains.length === 0) return [v.grantsOf(key).length > 0 ? 'removed' : 'stranger']
  const out = new Set<ActorClass>()
  for (const chain of chains) {
    const own = chain.at(-1)
    if (own !== undefined) for (const c of positionActor(own)) out.add(c)
  }
  return [...out]
}

/**
 * The classes relative to the thing acted on: an agent's owner, `--allow` and approvers, and the
 * agent itself (which agent a card or report is of is its host's and readers' to check).
 */
const relative: readonly ActorClass[] = ['owner', 'allowed', 'approver', 'agent']

/**
 * Whether admission lets an author holding `classes` take `action`. For a row admission
 * enforces, the table's answer. For a row another part enforces (the host, the notifier, a
 * reader, the pairing lane), admission cannot know the classes relative to an agent (its
 * policies are its host's), so a member counts as possibly holding them and the enforcer
 * narrows; what admission does know (founder, admin, agent, hub, removed, stranger) still
 * counts: a hub key, a removed person and a stranger are refused every row but AUTH, and a
 * fleet setting is an admin's or the founder's.
 */
export function mayAdmit(action: Action, classes: readonly ActorClass[]): boolean {
  if (mayAct(action, classes)) return true
  if (authorityRow(action).enforcedBy.includes('admission')) return false
  if (!classes.includes('member')) return false
  return mayAct(action, [...classes, ...relative])
}

/**
 * The classes a device holds toward a push sender (kith-notify): `owner` when the two keys
 * belong to one person at `at` (a device subscribes only through a node of its own person),
 * with its fleet classes. A node's push sender is a device key, and a subscription sealed to
 * another person's node asks for that person's notifications.
 */
export function pushSubscriber(
  v: GrantVerifier,
  device: string,
  sender: string,
  at: number,
): ActorClass[] {
  const classes = fleetActor(v, device, at)
  if (classes.includes('removed') || classes.includes('stranger')) return classes
  const mine = personsOf(v, device, at)
  for (const p of personsOf(v, sender, at)) if (mine.has(p)) return ['owner', ...classes]
  return classes
}

/** Whether `device` may push through `sender` at `at`: the one rule app, node and hub ask. */
export function mayPushThrough(
  v: GrantVerifier,
  device: string,
  sender: string,
  at: number,
): boolean {
  return mayAct('push.subscription', pushSubscriber(v, device, sender, at))
}
