import { signal } from '@preact/signals'
import {
  cardTally,
  channelOf,
  decisionStanding,
  parseAgentPolicy,
  policyRefusal,
  type DecisionContext,
  type Tally,
  FleetState,
  fleetActor,
  isNotice,
  Kind,
  mayAct,
  mayPushThrough,
  Names,
  openPromptsIn,
  openPromptScan,
  parsePermissionDecision,
  parsePermissionRequest,
  parsePushSender,
  parsePushSubscription,
  parseSessionState,
  personOf,
  PresenceBook,
  defaultPresenceSeconds,
  threadOf,
  verifyEventSignature,
  workOf,
  type NostrEvent,
  type PermissionDecision,
  type PermissionRequest,
  type ProfileSource,
  type SessionState,
  type Who,
} from '../../../browser-core.js'
import { WebKeys } from './e2e.js'
import { turnFromWork, Turns, type Turn } from './turns.js'

/** A node of the fleet that sends Web Push (kith-notify/1), with its VAPID key. */
export interface PushSenderInfo {
  device: string
  vapid: string
}

/** How often a device sends its presence (kith-chat/1: nodes, and this page, once a minute). */
export const presenceSeconds = defaultPresenceSeconds

export type AgentState = 'idle' | 'working' | 'awaiting permission'

/** Why a turn under way cannot finish: its host went offline, or the agent was removed. */
export type TurnStop = 'host offline' | 'removed'

const now = () => Math.floor(Date.now() / 1000)

/** Timeline order: by date, then by arrival. */
interface Entry {
  event: NostrEvent
  seq: number
}

/**
 * What this browser knows of the fleet: the same admission as a hub and a node (FleetState:
 * grant chains, revocations, channel definitions, the fleet tag) applied to every event after
 * its signature is checked, the same names (Names), and the chat, cards and turns it shows.
 * `revision` changes whenever something new was taken in; views read through it.
 */
export class FleetModel {
  readonly state: FleetState
  readonly names: Names
  /** kith-e2e/1: the keys this browser holds, opening and sealing channel events. */
  readonly e2e: WebKeys
  readonly turns: Turns
  readonly revision = signal(0)
  /** Set once this device is no longer a member (revoked, or its person removed). */
  readonly removed = signal<string | undefined>(undefined)
  private readonly seen = new Set<string>()
  private readonly profiles = new Map<string, NostrEvent>()
  private readonly pushSenders = new Map<string, { info: PushSenderInfo; at: number }>()
  /** Agents' sessions by host and address, the newest report of each. */
  private readonly sessionMap = new Map<string, SessionState>()
  /** This device's newest push subscription: which sender it names, and when. */
  private mySubscription: { sender: string; at: number; event: NostrEvent } | undefined
  /** Each device's newest presence, judged by the one rule the node uses (events/presence). */
  private readonly presence = new PresenceBook()
  /** Devices online at the last presenceTick, to redraw when one falls silent. */
  private onlineAtTick = ''
  private readonly channelsMap = new Map<string, Entry[]>()
  private readonly requests = new Map<string, PermissionRequest>()
  /** The signed card and decisions, which the one rule of what answers a card reads. */
  private readonly requestEvents = new Map<string, NostrEvent>()
  private readonly decisionEvents = new Map<string, NostrEvent[]>()
  /** Every agent policy (kind 34151) version seen, by id: cards name the one they were asked under. */
  private readonly policyEvents = new Map<string, NostrEvent>()
  private readonly decisions = new Map<string, PermissionDecision[]>()
  /** Replies by the event they answer (their `reply`, else `root`). */
  private readonly replies = new Map<string, NostrEvent[]>()
  /** How many messages each thread root has below it. */
  private readonly threadSizes = new Map<string, number>()
  private seq = 0

  constructor(
    readonly me: string,
    readonly fleet: string,
    secret: Uint8Array,
    authority: NostrEvent[],
  ) {
    this.state = new FleetState({ founder: fleet, verifySignature: verifyEventSignature })
    const profiles: ProfileSource = {
      newest: (filter) => {
        const author = filter.authors?.[0]
        return author === undefined ? undefined : this.profiles.get(author)
      },
    }
    this.names = new Names(this.state.grants, profiles, me)
    this.turns = new Turns(secret)
    this.e2e = new WebKeys(me, secret, fleet, this.state)
    this.intake(authority, { trusted: true })
  }

  /**
   * Takes events from a hub (or made here): verified, admitted, then kept and shown. Events
   * already known are not verified again. `trusted`: events this page verified and stored
   * before (IndexedDB), admitted without checking their signatures again. Returns the events
   * newly kept that are worth storing (not ephemeral).
   */
  intake(events: readonly NostrEvent[], opts: { trusted?: boolean } = {}): NostrEvent[] {
    const fresh = events.filter((e) => {
      if (this.seen.has(e.id) && e.kind !== Kind.Grant && e.kind !== Kind.Revocation) return false
      return opts.trusted === true || verifyEventSignature(e)
    })
    const kept: NostrEvent[] = []
    if (fresh.length === 0) return kept
    const t = now()
    let changed = false
    let authority = false
    for (const { event: e, admission } of this.state.admitBatch(fresh, t, {
      keepPending: true,
      // What a since-revoked device signed while it stood is history, told as it happened.
      history: true,
    })) {
      if (!admission.ok) {
        // A setting counts by its author's standing at its date (e2e-sealing), not now: one
        // whose author was removed since is still taken, as it was when it was signed.
        if (e.kind === Kind.FleetSetting) this.e2e.take(e)
        // Presence comes live from the first moment, before the catch-up brings the grants
        // of the devices it is from (a newly paired page knows only its own chain): kept,
        // the newest a device, and judged again once authority arrives, else a machine that
        // said it is up before then shows "no presence seen" until its next presence.
        if (e.kind === Kind.Presence) this.unplacedPresence(e)
        continue
      }
      authority ||= admission.authority || admission.revoked
      if (e.kind === Kind.ObserverFrame) {
        if (e.tags.some((tag) => tag[0] === 'p' && tag[1] === this.me) && this.turns.receive(e))
          changed = true
        continue
      }
      if (e.kind === Kind.Presence) {
        this.presence.receive(e, Date.now())
        changed = true
        continue
      }
      if (this.seen.has(e.id)) continue
      this.seen.add(e.id)
      changed = true
      // Sealed events are kept (stored) as they came, and shown opened once their key is here.
      for (const opened of this.e2e.take(e)) this.keep(opened)
      const shown = this.e2e.open(e)
      if (shown !== undefined) this.keep(shown)
      kept.push(e)
    }
    if (authority) {
      this.checkMembership(t)
      if (this.retryPresence(t)) changed = true
    }
    if (changed || authority) this.revision.value++
    return kept
  }

  /** Presence refused before its author's grant came, the newest a device, bounded. */
  private readonly waitingPresence = new Map<string, { event: NostrEvent; heardAtMs: number }>()

  private unplacedPresence(e: NostrEvent): void {
    const held = this.waitingPresence.get(e.pubkey)
    if (held !== undefined && held.event.created_at > e.created_at) return
    this.waitingPresence.delete(e.pubkey)
    if (this.waitingPresence.size >= 1000)
      this.waitingPresence.delete(this.waitingPresence.keys().next().value!)
    this.waitingPresence.set(e.pubkey, { event: e, heardAtMs: Date.now() })
  }

  /** Admits the presence that waited for grants, as heard when it came; true when any was. */
  private retryPresence(t: number): boolean {
    let taken = false
    for (const [device, { event, heardAtMs }] of this.waitingPresence) {
      if (!this.state.admit(event, t).ok) continue
      this.waitingPresence.delete(device)
      this.presence.receive(event, heardAtMs)
      taken = true
    }
    return taken
  }

  private keep(e: NostrEvent): void {
    switch (e.kind) {
      case Kind.ChannelDefinition:
        // Sent ahead of a private channel's events to a hub that lacks it (definitionsFirst).
        this.definitionEvents.set(e.id, e)
        return
      case Kind.Profile: {
        const prev = this.profiles.get(e.pubkey)
        if (prev === undefined || e.created_at >= prev.created_at) this.profiles.set(e.pubkey, e)
        return
      }
      case Kind.ChatMessage:
      case Kind.PermissionRequest: {
        if (e.kind === Kind.PermissionRequest) {
          // card.request is the agent's own (the authority table): a member's is no card.
          if (!mayAct('card.request', fleetActor(this.state.grants, e.pubkey, e.created_at))) return
          try {
            this.requests.set(e.id, parsePermissionRequest(e))
            this.requestEvents.set(e.id, e)
          } catch {
            // A card that does not read cannot be answered; it is not shown.
            return
          }
        }
        const channel = channelOf(e)
        if (channel === undefined) return
        this.insert(channel, e)
        if (e.kind === Kind.ChatMessage) {
          const { root, parent } = threadOf(e)
          if (root !== undefined) this.threadSizes.set(root, (this.threadSizes.get(root) ?? 0) + 1)
          if (parent !== undefined) {
            const list = this.replies.get(parent) ?? []
            list.push(e)
            this.replies.set(parent, list)
          }
        }
        return
      }
      case Kind.SessionState: {
        try {
          const s = parseSessionState(e)
          const key = `${s.host}:${s.address}`
          const prev = this.sessionMap.get(key)
          if (prev === undefined || s.reportedAt >= prev.reportedAt) this.sessionMap.set(key, s)
        } catch {
          // A report that does not read lists nothing.
        }
        return
      }
      case Kind.PushSender: {
        try {
          const info = parsePushSender(e)
          const prev = this.pushSenders.get(e.pubkey)
          if (prev === undefined || e.created_at >= prev.at)
            this.pushSenders.set(e.pubkey, { info, at: e.created_at })
        } catch {
          // An announcement that does not read offers nothing to subscribe to.
        }
        return
      }
      case Kind.PushSubscription: {
        if (e.pubkey !== this.me) return
        try {
          const sub = parsePushSubscription(e)
          if (this.mySubscription === undefined || e.created_at >= this.mySubscription.at)
            this.mySubscription = { sender: sub.sender, at: e.created_at, event: e }
        } catch {
          // Not one this app made: it names no sender here.
        }
        return
      }
      case Kind.AgentPolicy:
        this.policyEvents.set(e.id, e)
        return
      case Kind.PermissionDecision: {
        try {
          const d = parsePermissionDecision(e)
          const list = this.decisions.get(d.request) ?? []
          list.push(d)
          this.decisions.set(d.request, list)
          const events = this.decisionEvents.get(d.request) ?? []
          events.push(e)
          this.decisionEvents.set(d.request, events)
        } catch {
          // A decision that does not read decided nothing anywhere; nothing to show.
        }
        return
      }
      default:
    }
  }

  private insert(channel: string, event: NostrEvent): void {
    let list = this.channelsMap.get(channel)
    if (list === undefined) this.channelsMap.set(channel, (list = []))
    const entry = { event, seq: this.seq++ }
    let i = list.length
    while (i > 0 && list[i - 1]!.event.created_at > event.created_at) i--
    list.splice(i, 0, entry)
  }

  private checkMembership(t: number): void {
    const d = this.state.grants.isMember(this.me, t)
    if (d.ok) return
    this.removed.value = `${d.code}: ${d.reason}`
  }

  /** The chat of a channel (messages and permission cards), oldest first. */
  timeline(channel: string): NostrEvent[] {
    return (this.channelsMap.get(channel) ?? []).map((e) => e.event)
  }

  /** Channels with something in them, and those defined, by name. */
  channels(): string[] {
    const names = new Set(this.channelsMap.keys())
    for (const d of this.state.channels.definitions(Math.floor(Date.now() / 1000)))
      names.add(d.channel)
    return [...names].sort()
  }

  /** Newest activity in a channel (unix seconds), 0 when none. */
  lastActivity(channel: string): number {
    const list = this.channelsMap.get(channel)
    return list === undefined || list.length === 0 ? 0 : list[list.length - 1]!.event.created_at
  }

  /** Messages from others after `since`. */
  unread(channel: string, since: number): number {
    let n = 0
    const list = this.channelsMap.get(channel) ?? []
    for (let i = list.length - 1; i >= 0; i--) {
      const e = list[i]!.event
      if (e.created_at <= since) break
      if (e.pubkey !== this.me) n++
    }
    return n
  }

  /** A channel definition this page holds, by id. */
  definition(id: string): NostrEvent | undefined {
    return this.definitionEvents.get(id)
  }
  private readonly definitionEvents = new Map<string, NostrEvent>()

  event(id: string): NostrEvent | undefined {
    for (const list of this.channelsMap.values()) {
      const hit = list.find((e) => e.event.id === id)
      if (hit !== undefined) return hit.event
    }
    return undefined
  }

  /** A thread: its root and every message below it, oldest first. */
  thread(root: string): NostrEvent[] {
    const out: NostrEvent[] = []
    const first = this.event(root)
    if (first !== undefined) out.push(first)
    const channel = first === undefined ? undefined : channelOf(first)
    if (channel === undefined) return out
    for (const e of this.timeline(channel)) {
      if (e.id !== root && threadOf(e).root === root) out.push(e)
    }
    return out
  }

  /** How many messages are in the thread under `root`. */
  threadSize(root: string): number {
    return this.threadSizes.get(root) ?? 0
  }

  repliesTo(id: string): readonly NostrEvent[] {
    return this.replies.get(id) ?? []
  }

  /**
   * The notice a host answered a request with (kith-agents/1: it names the request, `e` …
   * `mention`), once it is here.
   */
  answerTo(request: string, channel: string): NostrEvent | undefined {
    return this.timeline(channel).find(
      (e) =>
        e.kind === Kind.ChatMessage &&
        e.tags.some((t) => t[0] === 'e' && t[1] === request && t[3] === 'mention'),
    )
  }

  /** Agents' sessions (closed ones only with `all`), the most recently active first. */
  sessions(all = false): SessionState[] {
    return [...this.sessionMap.values()]
      .filter((s) => all || s.status !== 'closed')
      .sort((a, b) => (b.activeAt ?? b.reportedAt) - (a.activeAt ?? a.reportedAt))
  }

  /** The nodes of this device's person that send Web Push, newest announcement each. */
  pushSendersOfMine(): PushSenderInfo[] {
    const t = now()
    // Online ones first (a sleeping laptop sends nothing), then the newest announcement. Only
    // those the table lets this device subscribe through (push.subscription: its own person).
    return [...this.pushSenders.values()]
      .filter((s) => mayPushThrough(this.state.grants, this.me, s.info.device, t))
      .sort(
        (a, b) =>
          Number(this.online(b.info.device)) - Number(this.online(a.info.device)) || b.at - a.at,
      )
      .map((s) => s.info)
  }

  /** The sender this device's newest subscription names (with `off`, the sender it left). */
  pushSubscription(): { sender: string; at: number; event: NostrEvent } | undefined {
    return this.mySubscription
  }

  profile(pubkey: string): NostrEvent | undefined {
    return this.profiles.get(pubkey)
  }

  request(id: string): PermissionRequest | undefined {
    return this.requests.get(id)
  }

  decisionsFor(request: string): readonly PermissionDecision[] {
    return this.decisions.get(request) ?? []
  }

  /**
   * The agent's turn on `prompt`: as its frames showed it live here, else as its answer keeps it
   * (the `work` tags of the reply: what ran and what changed, for a page that was not watching).
   */
  turn(prompt: string): Turn | undefined {
    const live = this.turns.byPrompt.get(prompt)
    if (live !== undefined) return live
    for (const reply of this.repliesTo(prompt)) {
      const work = workOf(reply)
      if (work.tools.length > 0) return turnFromWork(prompt, reply, work.tools)
    }
    return undefined
  }

  /** Names as a node shows them; remembered until the fleet changes (the next revision). */
  who(pubkey: string): Who {
    if (this.whoRevision !== this.revision.peek()) {
      this.whoCache.clear()
      this.whoRevision = this.revision.peek()
    }
    let w = this.whoCache.get(pubkey)
    if (w === undefined) this.whoCache.set(pubkey, (w = this.names.who(pubkey)))
    return w
  }
  private readonly whoCache = new Map<string, Who>()
  private whoRevision = -1

  isAgent(pubkey: string): boolean {
    return this.who(pubkey).role === 'agent'
  }

  /** When a device last said it was online (its presence, kind 24141), if this page saw it. */
  lastSeen(pubkey: string): number | undefined {
    return this.presence.get(pubkey, Date.now())?.createdAt
  }

  online(pubkey: string): boolean {
    return this.presence.get(pubkey, Date.now())?.status === 'online'
  }

  /**
   * Called now and then: a device that fell silent is offline without any event saying so, so
   * the views are redrawn when the set of online devices changed.
   */
  presenceTick(): void {
    const up = this.presence
      .all(Date.now())
      .filter((d) => d.status === 'online')
      .map((d) => d.device)
      .join(',')
    if (up === this.onlineAtTick) return
    this.onlineAtTick = up
    this.revision.value++
  }

  /** The device that last reported hosting `agent` (online or not), if this page heard one. */
  hostOf(agent: string): string | undefined {
    return this.presence.lastHost(agent, Date.now())?.device
  }

  /**
   * Why a turn of `agent` under way cannot finish, if it cannot: the agent was removed from the
   * fleet (nothing it says is taken), or the device hosting it is offline (kith-chat/1).
   */
  turnStop(agent: string): TurnStop | undefined {
    if (!this.state.grants.isMember(agent, now()).ok) return 'removed'
    const host = this.hostOf(agent)
    if (host !== undefined && !this.online(host)) return 'host offline'
    return undefined
  }

  /** The prompts still waiting for an agent in a channel (kith-agents/1, "Open prompts"). */
  openPrompts(channel: string, agents?: ReadonlySet<string>): string[] {
    const messages = this.timeline(channel)
      .filter((e) => e.kind === Kind.ChatMessage)
      .slice(-openPromptScan)
      .reverse()
    return openPromptsIn(messages, (k) => this.isAgent(k), agents)
  }

  /** Whether an agent has answered a prompt (a reply that is not a notice). */
  answered(prompt: string, agent: string): boolean {
    return this.repliesTo(prompt).some((r) => r.pubkey === agent && !isNotice(r))
  }

  /**
   * Whether a card can still be answered as far as this browser knows: not expired, its turn
   * not over, and no decision that answers it. What answers it is the one rule the notifier
   * withdraws by (grants/decision-standing.ts): bound to the card and signed by someone the
   * authority table lets decide, which this browser, not knowing the agent's policies, takes
   * as the agent's own person. Another member's decision leaves the card open to them.
   */
  requestOpen(r: PermissionRequest, t = now()): boolean {
    if (r.expires < t) return false
    if (this.answered(r.prompt, r.agent)) return false
    const request = this.requestEvents.get(r.id)
    if (request === undefined) return this.decisionsFor(r.id).length === 0
    const ctx = this.decisionContext(t)
    const decisions = this.decisionEvents.get(r.id) ?? []
    // A quorum card stays open until enough people allowed it, or an approver rejected it.
    const count = cardTally(request, decisions, ctx)
    if (count !== undefined) return count.state === 'waiting'
    return !decisions.some((d) => decisionStanding(d, request, ctx) === undefined)
  }

  /** A quorum card's tally as this browser counts it (grants/quorum.ts); undefined: no quorum. */
  tallyOf(r: PermissionRequest, t = now()): Tally | undefined {
    const request = this.requestEvents.get(r.id)
    if (request === undefined) return undefined
    return cardTally(request, this.decisionEvents.get(r.id) ?? [], this.decisionContext(t))
  }

  /** This device's person, for "you already allowed it". */
  myPerson(t = now()): string | undefined {
    return personOf(this.state.grants, this.me, t)
  }

  private decisionContext(t: number): DecisionContext {
    const grants = this.state.grants
    return {
      fleet: this.fleet,
      personOf: (k: string) => personOf(grants, k, t),
      policyOf: (id: string) => {
        const e = this.policyEvents.get(id)
        if (e === undefined || policyRefusal(e, grants) !== undefined) return undefined
        return parseAgentPolicy(e)
      },
    }
  }

  /** idle, working (a prompt open to it) or awaiting permission (an open card), as seen here. */
  agentState(agent: string): AgentState {
    let working = false
    for (const r of this.requests.values())
      if (r.agent === agent && this.requestOpen(r)) return 'awaiting permission'
    for (const channel of this.channelsMap.keys()) {
      if (this.openPrompts(channel, new Set([agent])).length > 0) {
        working = true
        break
      }
    }
    return working ? 'working' : 'idle'
  }

  /** Keys a mention can name, with what to type for each (`@name`, or `@person/name`). */
  mentionable(): { pubkey: string; handle: string; who: Who }[] {
    const t = now()
    const out: { pubkey: string; handle: string; who: Who }[] = []
    const keys = new Set([this.fleet, ...this.state.grants.subjects()])
    for (const pubkey of keys) {
      if (!this.state.grants.isMember(pubkey, t).ok) continue
      const who = this.names.who(pubkey, t)
      let handle = who.name
      try {
        if (this.names.resolve(handle, this.me, t) !== pubkey)
          handle = this.names.qualified(pubkey, t)
      } catch {
        // Ambiguous as a bare name: the person-qualified one is what resolves.
        handle = this.names.qualified(pubkey, t)
      }
      if (/\s/.test(handle)) continue
      out.push({ pubkey, handle, who })
    }
    return out.sort((a, b) => a.handle.localeCompare(b.handle))
  }
}
