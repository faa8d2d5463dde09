import type { Identity } from '../identity/keys.js'
import type { Names } from '../grants/names.js'
import { sealingLapse } from '../grants/e2e-sealing.js'
import type { HubLink } from '../link/hub-link.js'
import type { NodeStore } from '../store/node-store.js'
import type { E2eKeys } from './e2e-keys.js'
import type { GrantBook } from './grant-book.js'
import type { HostedAgent } from './node-context.js'
import { notifyStatus, type TargetStatus } from './notifications.js'
import { reportedState, type NodePresence } from './presence.js'

/**
 * What the node reports of itself over the control socket (`status`, `hosts`): the shapes `kith
 * status`, `kith chat` and `kith agent list` read, and the fleet's devices as this node sees them.
 */

/** A device of the fleet as `kith status` shows it. */
export interface DeviceStatus {
  name: string
  pubkey: string
  /** Whose it is, when it is not this node's own person's. */
  person: string | null
  /** This very device. */
  self: boolean
  /** online, offline, or unknown (nothing heard from it since this node started). */
  presence: 'online' | 'offline' | 'unknown'
  /** Seconds since this node last heard from it. */
  lastSeenSeconds: number | null
  /** The agents it reports hosting, with their states. */
  agents: { name: string; pubkey: string; state: string }[]
}

/** Where an agent runs as this node knows it (control request `hosts`). */
export interface AgentHost {
  agent: string
  /** Still a member of the fleet (a revoked agent can finish nothing). */
  member: boolean
  /** The device that last reported hosting it, by name. */
  host: string | null
  /** That device's presence now; unknown when no device reported hosting it. */
  status: 'online' | 'offline' | 'unknown'
}

export interface LinkStatus {
  url: string
  state: string
  lagMs: number | null
  cursor: number | null
  outbox: number
  lastError: string | null
  /** The last catch-up: how (reconciled or paged), events, time and rate. */
  lastSync?: string | null
}

/** An agent hosted here, as `kith status` and `kith agent list` show it. */
export interface HostedAgentStatus {
  name: string
  state: string
  adapter: { name?: string; version?: string }
  queue: number
  crashes: number
  sessions: number
}

/** The whole of `kith status` (control request `status`). */
export interface NodeStatus {
  device: string
  name: string
  fleet: string
  embeddedHub: string | null
  web: string | null
  removed: string | null
  /** Hubs that said this device is revoked when its own grant book says not (kith-hub, AUTH). */
  disputedRevocations: { url: string; message: string }[]
  /** Whether the fleet seals its channels (kith-e2e/1), as this node's settings say. */
  encrypt: boolean
  /** Why a fleet that sealed does not seal now; null when that is not so. */
  sealLapse: string | null
  hubs: LinkStatus[]
  outbox: number
  agents: HostedAgentStatus[]
  devices: DeviceStatus[]
  refused: { event: string; hub: string; message: string }[]
  notify: TargetStatus[]
}

/** What `deviceStatus` reads of the node. */
export interface StatusSource {
  readonly id: Identity
  readonly book: GrantBook
  readonly names: Names
  readonly agents: ReadonlyMap<string, HostedAgent>
  readonly presence: NodePresence
}

/**
 * Every device of the fleet (members now) with its presence as this node knows it, and the
 * agents each reports hosting with their states; this device first.
 */
export function deviceStatus(node: StatusSource): DeviceStatus[] {
  const nowMs = Date.now()
  const now = Math.floor(nowMs / 1000)
  const v = node.book.verifier
  const devices = [
    ...new Set(
      v
        .allGrants()
        .filter((g) => g.role === 'device' && v.isMember(g.subject, now).ok)
        .map((g) => g.subject),
    ),
  ]
  const named = (pubkey: string, state: string) => ({
    name: node.names.who(pubkey).name,
    pubkey,
    state,
  })
  const rows = devices.map((pubkey): DeviceStatus => {
    const who = node.names.who(pubkey)
    const base = {
      name: who.name,
      pubkey,
      person: who.mine ? null : (who.person ?? null),
      self: pubkey === node.id.devicePubkey,
    }
    if (base.self)
      return {
        ...base,
        presence: 'online',
        lastSeenSeconds: 0,
        agents: [...node.agents.values()].map((a) =>
          named(a.record.pubkey, reportedState(a.host.state)),
        ),
      }
    const p = node.presence.book.get(pubkey, nowMs)
    return {
      ...base,
      presence: p?.status ?? 'unknown',
      lastSeenSeconds: p === undefined ? null : Math.round((nowMs - p.heardAt) / 1000),
      agents: (p?.agents ?? []).map((a) => named(a.pubkey, a.state)),
    }
  })
  return rows.sort((a, b) => Number(b.self) - Number(a.self) || a.name.localeCompare(b.name))
}

/** What `nodeStatus` reads of the node (a `KithNode`), beside what `deviceStatus` reads. */
export interface NodeStatusSource extends StatusSource {
  readonly fleet: string
  readonly store: NodeStore
  readonly e2e: E2eKeys
  readonly links: readonly HubLink[]
  readonly embedded: { readonly url: string } | undefined
  readonly webUrl: string | undefined
  readonly removed: string | undefined
}

/**
 * The whole of `kith status`: this device, its hubs (link state, lag, cursor, what each has not
 * answered), its hosted agents, the fleet's devices, refusals and notification targets.
 * `disputed`: hubs that said this device is revoked when its own grant book says not, by url.
 */
export function nodeStatus(
  node: NodeStatusSource,
  disputed: ReadonlyMap<string, string>,
): NodeStatus {
  return {
    device: node.id.devicePubkey,
    name: node.id.config.name,
    fleet: node.fleet,
    embeddedHub: node.embedded?.url ?? null,
    web: node.webUrl ?? null,
    removed: node.removed ?? null,
    disputedRevocations: [...disputed].map(([url, message]) => ({ url, message })),
    encrypt: node.e2e.encrypts(),
    sealLapse: sealingLapse(node.e2e.sealing()) ?? null,
    hubs: node.links.map((l) => ({
      url: l.url,
      state: l.state,
      lagMs: l.rttMs ?? null,
      cursor: node.store.cursor(l.url) ?? null,
      outbox: node.store.pendingFor(l.url).length,
      lastError: l.lastError ?? null,
      lastSync: l.lastSync ?? null,
    })),
    outbox: node.store.outboxDepth(node.links.map((l) => l.url)),
    agents: [...node.agents.values()].map((a) => ({
      name: a.record.name,
      state: a.host.state,
      adapter: a.host.info,
      queue: a.host.queueDepth,
      crashes: a.host.crashes,
      sessions: node.store.agentSessionCount(a.record.pubkey),
    })),
    devices: deviceStatus(node),
    refused: node.store
      .refusals()
      .map((r) => ({ event: r.eventId, hub: r.hub, message: r.message })),
    notify: notifyStatus(node.store),
  }
}
