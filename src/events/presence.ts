import type { EventTemplate, NostrEvent } from './event.js'
import { Kind } from './kinds.js'

/**
 * Presence (kind 24141, kith-chat/1): which devices of the fleet are up, and the state of each
 * agent they host. Made, read and judged here only: the node (`kith status`, `/who`, the CLI's
 * "host offline") and the web app's Fleet page ask this module whether a device is online, so
 * they cannot disagree about it.
 */

/** How often a device says it is up when it names no interval (kith-chat/1: 60 s). */
export const defaultPresenceSeconds = 60

/**
 * A device is offline once this many of its own intervals passed without a word from it: two
 * and a half, so one lost presence (presence is best effort) never shows a device as down.
 */
export const offlineAfterIntervals = 2.5

/** Agents a presence lists at most (the hub takes 1,000 tags; nobody hosts this many). */
export const maxPresenceAgents = 200

/** The states an agent's host reports (kith-chat/1, Presence). */
export const agentStates = [
  'idle',
  'starting',
  'working',
  'awaiting-permission',
  'crashed',
  'circuit-open',
] as const
export type ReportedAgentState = (typeof agentStates)[number]

export interface PresenceAgent {
  pubkey: string
  state: ReportedAgentState
}

export type PresenceStatus = 'online' | 'offline'

/** A presence to send: this device's status and (online) its agents' states. */
export function makePresence(
  status: PresenceStatus,
  agents: readonly PresenceAgent[],
  createdAt: number,
  intervalSeconds = defaultPresenceSeconds,
): EventTemplate {
  const tags: string[][] = [
    ['status', status],
    ['interval', String(intervalSeconds)],
  ]
  if (status === 'online')
    for (const a of agents.slice(0, maxPresenceAgents)) tags.push(['agent', a.pubkey, a.state])
  return { kind: Kind.Presence, created_at: createdAt, tags, content: '' }
}

/** A presence as read: what a device said of itself. */
export interface Presence {
  device: string
  createdAt: number
  status: PresenceStatus
  intervalSeconds: number
  /** The agents it reported, those it named readably (none when offline). */
  agents: PresenceAgent[]
}

/**
 * Reads a presence leniently (it is best effort, and a newer node may say more): anything but
 * `offline` is online, an interval outside 1 s–1 day is the default, an agent tag that is not a
 * hex key with a known state is skipped. Undefined for another kind.
 */
export function parsePresence(event: NostrEvent): Presence | undefined {
  if (event.kind !== Kind.Presence) return undefined
  const status = event.tags.find((t) => t[0] === 'status')?.[1] === 'offline' ? 'offline' : 'online'
  const interval = Number(event.tags.find((t) => t[0] === 'interval')?.[1])
  const intervalSeconds =
    Number.isFinite(interval) && interval >= 1 && interval <= 86_400
      ? interval
      : defaultPresenceSeconds
  const agents: PresenceAgent[] = []
  if (status === 'online')
    for (const t of event.tags) {
      if (t[0] !== 'agent' || !/^[0-9a-f]{64}$/.test(t[1] ?? '')) continue
      const state = (agentStates as readonly string[]).includes(t[2] ?? '')
        ? (t[2] as ReportedAgentState)
        : undefined
      if (state !== undefined && agents.length < maxPresenceAgents)
        agents.push({ pubkey: t[1]!, state })
    }
  return { device: event.pubkey, createdAt: event.created_at, status, intervalSeconds, agents }
}

/**
 * THE rule for "is this device online" (kith-chat/1): its newest presence said `online` and
 * no more than 2.5 of its intervals passed since it was heard (`heardAtMs` and `nowMs` on the
 * hearer's clock, so a device's clock being off does not matter). A device that said `offline`
 * is offline at once.
 */
export function isOnline(
  heard: { status: PresenceStatus; intervalSeconds: number; heardAtMs: number },
  nowMs: number,
): boolean {
  return (
    heard.status === 'online' &&
    nowMs - heard.heardAtMs <= heard.intervalSeconds * 1000 * offlineAfterIntervals
  )
}

export interface DevicePresence {
  device: string
  /** online, or offline (it said so, or nothing came from it for 2.5 of its intervals). */
  status: PresenceStatus
  /** When this hearer last heard from it (ms, the hearer's clock). */
  heardAt: number
  /** When the device dated its newest presence (its clock, seconds). */
  createdAt: number
  /** Its agents as it last reported them (none when offline). */
  agents: PresenceAgent[]
}

/** An agent's state as the device hosting it last reported it (`heardAt`: ms, this clock). */
export interface AgentReport {
  device: string
  state: ReportedAgentState
  heardAt: number
}

/**
 * What one hearer (a node, a browser page) heard of the fleet's devices, in memory only
 * (presence is ephemeral). Pure: the hearer passes its clock in.
 */
export class PresenceBook {
  private readonly heard = new Map<string, Presence & { heardAtMs: number }>()

  /**
   * Takes a presence (already verified and authorized). One dated before the newest held from
   * its device is ignored: presence can arrive out of order (two hubs, a reconnect), and an old
   * `online` must not bring back a device that since said `offline`. Returns true when its
   * device was not known to be online before: a newcomer the hearer may answer.
   */
  receive(event: NostrEvent, nowMs: number): boolean {
    const p = parsePresence(event)
    if (p === undefined) return false
    const held = this.heard.get(p.device)
    if (held !== undefined && held.createdAt > p.createdAt) return false
    const before = this.get(p.device, nowMs)
    // An offline device keeps the agents it last reported: a turn under way there is known to
    // have lost its host (lastHost), not taken as hosted nowhere.
    this.heard.set(p.device, {
      ...p,
      heardAtMs: nowMs,
      agents: p.status === 'online' ? p.agents : (held?.agents ?? []),
    })
    return p.status === 'online' && before?.status !== 'online'
  }

  /** What is known of `device` now, or undefined when nothing was heard from it. */
  get(device: string, nowMs: number): DevicePresence | undefined {
    const h = this.heard.get(device)
    if (h === undefined) return undefined
    const status = isOnline(h, nowMs) ? 'online' : 'offline'
    return {
      device,
      status,
      heardAt: h.heardAtMs,
      createdAt: h.createdAt,
      agents: status === 'online' ? h.agents : [],
    }
  }

  /** Every device heard from. */
  all(nowMs: number): DevicePresence[] {
    return [...this.heard.keys()].map((d) => this.get(d, nowMs)!)
  }

  /** The device (online) that last reported hosting `agent`, with the state it reported. */
  hostOf(agent: string, nowMs: number): AgentReport | undefined {
    let best: AgentReport | undefined
    for (const d of this.all(nowMs)) {
      const a = d.agents.find((x) => x.pubkey === agent)
      if (a !== undefined && (best === undefined || d.heardAt > best.heardAt))
        best = { device: d.device, state: a.state, heardAt: d.heardAt }
    }
    return best
  }

  /**
   * The device that last reported hosting `agent`, online or not: a turn's host that went away
   * (it said offline, or fell silent) is still named, with its status now.
   */
  lastHost(agent: string, nowMs: number): { device: string; status: PresenceStatus } | undefined {
    let best: { device: string; heardAt: number } | undefined
    for (const [device, h] of this.heard) {
      if (!h.agents.some((a) => a.pubkey === agent)) continue
      if (best === undefined || h.heardAtMs > best.heardAt) best = { device, heardAt: h.heardAtMs }
    }
    if (best === undefined) return undefined
    return { device: best.device, status: this.get(best.device, nowMs)!.status }
  }
}
