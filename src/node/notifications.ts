import { signEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { makePushSender, pushD } from '../events/push.js'
import { policyAt } from '../grants/agent-policy-standing.js'
import { mayActOnAgent } from '../grants/authority.js'
import { mayPushThrough } from '../grants/event-authority.js'
import { personOf } from '../grants/members.js'
import { listAgentRecords } from '../identity/agents.js'
import type { Identity } from '../identity/keys.js'
import type { ClassifyContext } from '../notify/classify.js'
import { Notifier } from '../notify/notifier.js'
import { loadOrCreateVapid, type Vapid } from '../notify/vapid.js'
import type { NodeStore } from '../store/node-store.js'
import type { GrantBook } from './grant-book.js'
import type { Names } from '../grants/names.js'

interface NotificationsDeps {
  id: Identity
  store: NodeStore
  book: GrantBook
  names: Names
  fleet: string
  log: (line: string) => void
  now: () => number
  /** The web app `kith up` serves, once it does (links open there unless a target names one). */
  webBase: () => string | undefined
  /** Whether the fleet seals its channels (kith-e2e/1). */
  seals: () => boolean
}

/**
 * A node's notifications for its person (kith-notify/1): the Notifier, fed by what the node
 * admits, and this node's push-sender announcement (its VAPID key) so its person's web devices
 * can subscribe through it.
 */
export function startNotifications(deps: NotificationsDeps): Notifier {
  const { id, store, book, names } = deps
  const vapid = loadOrCreateVapid(id.home)
  const ctx: ClassifyContext = {
    get person() {
      return personOf(book.verifier, id.devicePubkey, deps.now()) ?? id.ownerPubkey ?? deps.fleet
    },
    personOf: (key) => personOf(book.verifier, key, deps.now()),
    isAgent: (key) => names.who(key).role === 'agent',
    nameOf: (key) => names.who(key).name,
    event: (eventId) => store.reads.event(eventId),
    fleet: deps.fleet,
    now: deps.now,
    seals: deps.seals,
    // Admission refused any other (push.subscription); asked again as the node's grants are now.
    mayPushThrough: (device, sender, at) => mayPushThrough(book.verifier, device, sender, at),
    // A quorum card's tally is counted over the decisions this node holds on it.
    decisionsOf: (request) =>
      store.reads.events({ kinds: [Kind.PermissionDecision], tags: { e: [request] }, limit: 500 }),
    // As the hosting node decides (agent-bridge.ts): its real approvers where this node hosts
    // the agent; for another node's agent, the policy it publishes (else its person only).
    mayDecide: (author, agent, action) => {
      const now = deps.now()
      const hosted = listAgentRecords(id.home).find((r) => r.pubkey === agent)
      // Another node's agent: its policy on the wire (kind 34151) in force now, when one counts.
      const wire =
        hosted === undefined
          ? policyAt(
              [...store.events.allVersionsOfKind(Kind.AgentPolicy)],
              agent,
              now,
              book.verifier,
            )
          : undefined
      const standing =
        hosted === undefined
          ? {
              key: agent,
              owner: personOf(book.verifier, agent, now),
              allow: wire?.allow,
              approvers: wire?.approvers,
            }
          : { key: agent, owner: id.ownerPubkey, allow: hosted.allow, approvers: hosted.approvers }
      return mayActOnAgent(book.verifier, author, now, standing, action)
    },
  }
  const notifier = new Notifier({
    store: store.notify,
    ctx,
    deviceSecret: id.deviceSecret,
    devicePubkey: id.devicePubkey,
    log: deps.log,
    vapid: () => vapid,
    get webBase() {
      return deps.webBase()
    },
  })
  publishSender(deps, vapid)
  return notifier
}

/** The push-sender event (34160), signed by the device and sent only when its key changed. */
function publishSender(deps: NotificationsDeps, vapid: Vapid): void {
  const { id, store } = deps
  const current = store.reads.newest({
    kinds: [Kind.PushSender],
    authors: [id.devicePubkey],
    tags: { d: [pushD] },
  })
  const template = makePushSender(vapid.publicKey, deps.now())
  if (current !== undefined && current.content === template.content) return
  store.enqueue(signEvent(template, id.deviceSecret), deps.now())
}

/** A target as `kith status` and `kith notify list` show it. */
export interface TargetStatus {
  id: string
  type: string
  /** Where it goes: a Web Push endpoint shows only its origin (the path is a capability). */
  where: string
  classes: string[]
  finishedAfter: number
  lastOk: number | null
  lastError: string | null
  gone: boolean
  /** ntfy, webhook: a sealed fleet's message text is sent too (--full-text). */
  fullText: boolean
  pending: number
  failed: number
  sent: number
}

export function whereOf(t: { type: string; url: string }): string {
  if (t.type === 'desktop') return 'this machine'
  try {
    const u = new URL(t.url)
    if (t.type === 'webpush') return `${u.origin} (Web Push)`
    u.username = ''
    u.password = ''
    return u.toString()
  } catch {
    return t.url
  }
}

export function notifyStatus(store: NodeStore): TargetStatus[] {
  const counts = store.notify.counts()
  return store.notify.targets().map((t) => {
    const c = counts.get(t.id) ?? { pending: 0, failed: 0, sent: 0 }
    return {
      id: t.id,
      type: t.type,
      where: whereOf(t),
      classes: t.classes,
      finishedAfter: t.finishedAfter,
      lastOk: t.lastOk ?? null,
      lastError: t.lastError ?? null,
      gone: t.gone,
      fullText: t.fullText,
      ...c,
    }
  })
}
