import { signEvent, type NostrEvent } from '../events/event.js'
import {
  agentStates,
  makePresence,
  PresenceBook,
  type ReportedAgentState,
} from '../events/presence.js'
import type { HubLink } from '../link/hub-link.js'
import { presenceAnswerMs, presenceIntervalSeconds, presenceSettleMs } from './timings.js'

/**
 * Presence (kind 24141, kith-chat/1) as the node uses it: made, read and judged in
 * events/presence.ts (the web app asks the same module). A node sends its own when a link comes
 * up, when one of its agents changes state, every `presenceIntervalSeconds`, and `offline` when
 * it stops; it keeps what it hears in memory only (presence is ephemeral: after a restart it
 * knows again within one interval, or at once from the devices that answer its own first
 * presence).
 */
export {
  agentStates,
  isOnline,
  makePresence,
  maxPresenceAgents,
  offlineAfterIntervals,
  PresenceBook,
  type AgentReport,
  type DevicePresence,
  type PresenceAgent,
  type ReportedAgentState,
} from '../events/presence.js'
export { presenceAnswerMs, presenceIntervalSeconds } from './timings.js'

/** An AgentHost state as presence reports it: not yet spawned is ready (idle) to a prompter. */
export function reportedState(state: string): ReportedAgentState {
  if (state === 'stopped') return 'idle'
  return (agentStates as readonly string[]).includes(state) ? (state as ReportedAgentState) : 'idle'
}

/** What `NodePresence` uses of the node it speaks for. */
export interface PresenceDeps {
  readonly deviceSecret: Uint8Array
  readonly devicePubkey: string
  /** The node's own array of links (added to after this exists). */
  readonly links: readonly HubLink[]
  /** The agents hosted here, with their hosts' states now. */
  hostedAgents(): { pubkey: string; state: string }[]
  now(): number
  stopped(): boolean
  log(line: string): void
  /** How often this node says it is online (ms); presenceIntervalSeconds when not set. */
  intervalMs?: number
}

/**
 * This node's presence and what it hears of others': the interval, the settled send after an
 * agent's state changed, the answer to a newcomer, and the `offline` said at the stop.
 */
export class NodePresence {
  /** Other devices' presence, with their agents' states (kith-chat/1, Presence). */
  readonly book = new PresenceBook()
  private timer: NodeJS.Timeout | undefined
  /** A presence is due because an agent's state changed (sent once the burst settles). */
  private due: NodeJS.Timeout | undefined
  /** When this node last answered a newcomer's presence with its own (ms). */
  private answeredAt = 0
  /** A newcomer's answer held back by presenceAnswerMs, sent at the window's end. */
  private answerTimer: NodeJS.Timeout | undefined

  constructor(private readonly deps: PresenceDeps) {}

  private get intervalMs(): number {
    return this.deps.intervalMs ?? presenceIntervalSeconds * 1000
  }

  /** Says "online" every interval from now on. */
  start(): void {
    this.timer = setInterval(() => this.broadcast(), this.intervalMs)
    this.timer.unref()
  }

  /** This device's presence: online (with its agents' states) or offline. */
  event(status: 'online' | 'offline'): NostrEvent {
    const interval = Math.max(1, Math.round(this.intervalMs / 1000))
    const agents = this.deps
      .hostedAgents()
      .map((a) => ({ pubkey: a.pubkey, state: reportedState(a.state) }))
    return signEvent(
      makePresence(status, agents, this.deps.now(), interval),
      this.deps.deviceSecret,
    )
  }

  /** Sends this device's presence (online unless given) on one link; a refusal is logged. */
  send(link: HubLink, event = this.event('online')): Promise<void> {
    return link.publish(event).then(
      (answer) => {
        if (!answer.ok) this.deps.log(`presence refused by ${link.url}: ${answer.message}`)
      },
      (err: unknown) => this.deps.log(`presence to ${link.url}: ${String(err)}`),
    )
  }

  private broadcast(): void {
    if (this.deps.stopped()) return
    const event = this.event('online')
    for (const link of this.deps.links) if (link.authenticated) void this.send(link, event)
  }

  /** An agent's state changed: the fleet hears it once the burst settles (a turn starts many). */
  changed(): void {
    if (this.deps.stopped() || this.due !== undefined) return
    this.due = setTimeout(() => {
      this.due = undefined
      this.broadcast()
    }, presenceSettleMs)
    this.due.unref()
  }

  /**
   * Another device's presence, admitted by intake. A device this node had not heard from (just
   * started, or back) hears this node's presence at once rather than within an interval.
   */
  receive(event: NostrEvent): void {
    if (event.pubkey === this.deps.devicePubkey) return
    if (this.book.receive(event, Date.now())) this.answerNewcomer()
  }

  /**
   * Answers a newcomer's presence with this node's own: at once, or (when it answered another
   * within presenceAnswerMs) once at that window's end, never dropped. A second device that
   * appeared within 5 s of the first once heard nothing until this node's next interval.
   */
  private answerNewcomer(): void {
    const send = () => {
      this.answerTimer = undefined
      this.answeredAt = Date.now()
      this.broadcast()
    }
    const wait = this.answeredAt + presenceAnswerMs - Date.now()
    if (wait <= 0) send()
    else this.answerTimer ??= setTimeout(send, wait)
  }

  /** Stops the interval and any send still due (the first thing a stopping node does). */
  stopTimers(): void {
    clearInterval(this.timer)
    clearTimeout(this.answerTimer)
    clearTimeout(this.due)
  }

  /**
   * Says "offline" on every authenticated link, so the fleet sees this device go at once;
   * bounded by `waitMs` (a hub that does not answer must not hold the stop).
   */
  async sayOffline(waitMs: number): Promise<void> {
    const offline = this.event('offline')
    await Promise.race([
      Promise.all(this.deps.links.filter((l) => l.authenticated).map((l) => this.send(l, offline))),
      new Promise((r) => setTimeout(r, waitMs).unref()),
    ])
  }
}
