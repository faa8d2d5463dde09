import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { presenceIntervalSeconds } from './timings.js'

/**
 * Presence (kind 24141, kith-chat/1): which devices of the fleet are up, and the state of each
 * agent they host. A node sends its own when a link comes up, when one of its agents changes
 * state, every `presenceIntervalSeconds`, and `offline` when it stops; it keeps what it hears in
 * memory only (presence is ephemeral: after a restart it knows again within one interval, or at
 * once from the devices that answer its own first presence).
 */

/**
 * A device is offline once this many of its own intervals passed without a word from it: two
 * and a half, so one lost presence (presence is best effort) never shows a device as down.
 */
export const offlineAfterIntervals = 2.5
export { presenceAnswerMs, presenceIntervalSeconds } from './timings.js'

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

/** A presence to send: this device's status and its agents' states. */
export function presenceTemplate(
  status: 'online' | 'offline',
  agents: readonly PresenceAgent[],
  createdAt: number,
  intervalSeconds = presenceIntervalSeconds,
): { kind: number; created_at: number; tags: string[][]; content: string } {
  const tags: string[][] = [
    ['status', status],
    ['interval', String(intervalSeconds)],
  ]
  if (status === 'online')
    for (const a of agents.slice(0, maxPresenceAgents)) tags.push(['agent', a.pubkey, a.state])
  return { kind: Kind.Presence, created_at: createdAt, tags, content: '' }
}

export interface DevicePresence {
  device: string
  /** online, or offline (it said so, or nothing came from it for 2.5 of its intervals). */
  status: 'online' | 'offline'
  /** When this node last heard from it (ms, this node's clock). */
  heardAt: number
  /** Its agents as it last reported them (none when offline). */
  agents: PresenceAgent[]
}

/** An agent's state as the device hosting it last reported it (`heardAt`: ms, this clock). */
export interface AgentReport {
  device: string
  state: ReportedAgentState
  heardAt: number
}

/** What this node heard of other devices' presence. */
export class PresenceBook {
  private readonly heard = new Map<
    string,
    { status: 'online' | 'offline'; heardAt: number; intervalMs: number; agents: PresenceAgent[] }
  >()

  /**
   * Takes a presence (already verified and authorized). Returns true when its device was not
   * known to be online before: a newcomer this node may answer with its own presence.
   */
  receive(event: NostrEvent, nowMs: number): boolean {
    if (event.kind !== Kind.Presence) return false
    const before = this.get(event.pubkey, nowMs)
    const status =
      event.tags.find((t) => t[0] === 'status')?.[1] === 'offline' ? 'offline' : 'online'
    const interval = Number(event.tags.find((t) => t[0] === 'interval')?.[1])
    const intervalMs =
      Number.isFinite(interval) && interval >= 1 && interval <= 86_400
        ? interval * 1000
        : presenceIntervalSeconds * 1000
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
    // An offline device keeps the agents it last reported: a turn under way there is known to
    // have lost its host (lastHost), not taken as hosted nowhere.
    this.heard.set(event.pubkey, {
      status,
      heardAt: nowMs,
      intervalMs,
      agents: status === 'online' ? agents : (this.heard.get(event.pubkey)?.agents ?? []),
    })
    return status === 'online' && before?.status !== 'online'
  }

  /** What is known of `device` now, or undefined when nothing was heard from it. */
  get(device: string, nowMs: number): DevicePresence | undefined {
    const h = this.heard.get(device)
    if (h === undefined) return undefined
    const stale = nowMs - h.heardAt > h.intervalMs * offlineAfterIntervals
    const status = h.status === 'online' && !stale ? 'online' : 'offline'
    return {
      device,
      status,
      heardAt: h.heardAt,
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
  lastHost(
    agent: string,
    nowMs: number,
  ): { device: string; status: 'online' | 'offline' } | undefined {
    let best: { device: string; heardAt: number } | undefined
    for (const [device, h] of this.heard) {
      if (!h.agents.some((a) => a.pubkey === agent)) continue
      if (best === undefined || h.heardAt > best.heardAt) best = { device, heardAt: h.heardAt }
    }
    if (best === undefined) return undefined
    return { device: best.device, status: this.get(best.device, nowMs)!.status }
  }
}

/** An AgentHost state as presence reports it: not yet spawned is ready (idle) to a prompter. */
export function reportedState(state: string): ReportedAgentState {
  if (state === 'stopped') return 'idle'
  return (agentStates as readonly string[]).includes(state) ? (state as ReportedAgentState) : 'idle'
}
