import type { TargetStatus } from './notifications.js'

/**
 * What the node reports of itself over the control socket (`status`, `hosts`): the shapes `kith
 * status`, `kith chat` and `kith agent list` read.
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
