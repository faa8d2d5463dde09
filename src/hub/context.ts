import type { Admission } from './admission.js'
import type { EventLimits } from './event-limits.js'
import type { GroupCommit } from './group-commit.js'
import type { HubLimits } from './limits.js'
import type { ChannelBook } from '../grants/channels.js'
import type { FleetState } from '../grants/fleet-state.js'
import type { GrantVerifier } from '../grants/verifier.js'
import type { ReqScheduler, Streaming, WorkBudget } from './req-scheduler.js'
import type { SubscriptionIndex } from './subscriptions.js'
import type { TurnQueue } from './turn-queue.js'
import type { VerifyPool } from '../verify/pool.js'
import type { EventStore } from '../store/event-store.js'

/** What every connection of one hub shares. */
export interface HubContext<C> {
  store: EventStore
  commit: GroupCommit
  verifier: VerifyPool
  subs: SubscriptionIndex<C>
  limits: HubLimits
  /** Grants, revocations and channel definitions, with the admission rule nodes share. */
  state: FleetState
  /** Membership and write permission: the grant chains of the fleet (state.grants). */
  grants: GrantVerifier
  /** Channel definitions: who may read and post in a private channel. */
  channels: ChannelBook
  /** Re-checks every live connection after a revocation; drops those no longer members. */
  /** Ends what no longer stands; `cause` (the revocation) goes first to those it ends. */
  enforce: (cause?: import('../events/event.js').NostrEvent) => void
  /** Rate limits (per person, per hub, per key for authority kinds) and storage quotas. */
  eventLimits: EventLimits
  /** Strangers' sockets: deadlines, caps per address and in all. */
  admission: Admission
  /** Sends REQs' stored parts a slice at a time, round robin over connections. */
  reqs: ReqScheduler<C & Streaming>
  /** Main-thread time for REQs' stored parts and NIP-77 work, per person. */
  reqWork: WorkBudget
  /** Per person: authenticated connections and open NIP-77 reconciliations (limits' caps). */
  perPerson: { connections: Map<string, number>; negOpen: Map<string, number> }
  /** NIP-77 work, one step a loop turn hub-wide (hub/turn-queue.ts). */
  negTurns: TurnQueue
  /** Normalised URLs a client may name in its AUTH relay tag. */
  relayUrls: ReadonlySet<string>
  /** Unix seconds. */
  now: () => number
  /** Delivers a stored or ephemeral event to every live subscription that matches. */
  fanOut: (raw: string, event: import('../events/event.js').NostrEvent) => void
  log: (line: string) => void
  lane: import('./pairing-lane.js').PairingLane<C>
}
