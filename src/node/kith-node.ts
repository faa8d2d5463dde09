import { join } from 'node:path'
import { KithError } from '../errors.js'
import { signEvent, type NostrEvent } from '../events/event.js'
import { isEphemeralKind, Kind } from '../events/kinds.js'
import { startHub, type Hub } from '../hub/server.js'
import { VerifyPool } from '../verify/pool.js'
import { homeFiles } from '../identity/home.js'
import { loadIdentity, type Identity } from '../identity/keys.js'
import { HubLink } from '../link/hub-link.js'
import { NodeStore } from '../store/node-store.js'
import { OutboxPump } from './outbox-pump.js'
import { notifyStatus, startNotifications, type TargetStatus } from './notifications.js'
import type { Notifier } from '../notify/notifier.js'
import { E2eKeys } from './e2e-keys.js'
import { makeFleetSetting } from '../events/e2e-setting.js'
import { sealingLapse } from '../grants/e2e-sealing.js'
import { judgeHubRevoked } from '../grants/hub-revoked.js'
import { isSealed } from '../events/e2e-seal.js'
import { AgentBridge, type AgentBridgeOptions } from './agent-bridge.js'
import { buildChat, chatHistory, chatItem, type ChatItem } from './chat-store.js'
import { startControlServer, type ControlClientHandle, type ControlServer } from './control.js'
import { ensureOwnDeviceGrant } from './fleet.js'
import { definitionsFirst } from './channel-sync.js'
import { GrantBook } from './grant-book.js'
import { Names, resolveAgent } from '../grants/names.js'
import {
  maxPresenceAgents,
  PresenceBook,
  presenceAnswerMs,
  presenceIntervalSeconds,
  makePresence,
  reportedState,
  type DevicePresence,
} from './presence.js'
import type { HostedAgent } from './node-context.js'
import type { ChannelBook } from '../grants/channels.js'
import { listSessions } from './sessions.js'
import { sessionStartOf, sessionStartTags } from '../events/session-start.js'
import { deviceProfileContent, makeDeviceProfile } from '../events/profile.js'
import { e2eFreshSeconds, offlinePresenceWaitMs, presenceSettleMs, sendWaitMs } from './timings.js'

export const controlSocketFile = homeFiles.controlSocket
export const defaultEmbeddedPort = 7447

/** Stored events a reconciliation with a hub covers at most (the hub's own limit is 500,000). */
const maxReconcileKeys = 500_000

/** Kinds a node follows: chat, permission requests/decisions, agent control, sessions. */
const followedKinds = [
  Kind.ChatMessage,
  Kind.PermissionRequest,
  Kind.PermissionDecision,
  Kind.AgentControl,
  Kind.PushSubscription,
  Kind.SessionControl,
  Kind.SessionState,
]
/**
 * The authority kinds: fetched before the catch-up (whole on a first connect, then only what is
 * new since the authority cursor). Key envelopes (kith-e2e) are here so that a catch-up, which
 * pages newest first, has the keys before the content they open.
 */
const vitalKinds = [
  Kind.Profile,
  Kind.Grant,
  Kind.Revocation,
  Kind.ChannelDefinition,
  Kind.PushSender,
  Kind.FleetSetting,
  Kind.KeyEnvelope,
  // Agents' policies: every device (and `kith audit`) judges cards by the version in force.
  Kind.AgentPolicy,
]

export interface NodeOptions extends AgentBridgeOptions {
  home: string
  log?: (line: string) => void
  /** Port of the embedded hub when no hub is configured (0 picks one). */
  embedPort?: number
  pageSize?: number
  presenceIntervalMs?: number
  verifyWorkers?: number
}

export { buildChat, chatHistory, unknownChannelNote, type ChatItem } from './chat-store.js'
export type { WatchFrame } from './observer-frames.js'

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

/**
 * The daemon behind `kith up`: links to every configured hub (or an embedded one), an outbox
 * that loses nothing, verified and authorized intake, presence and profile, and the control
 * socket the CLI talks through.
 */
export class KithNode {
  readonly store: NodeStore
  readonly book: GrantBook
  readonly names: Names
  /** Private channels' definitions: the node enforces membership too (a plain relay does not). */
  readonly channels: ChannelBook
  readonly links: HubLink[] = []
  embedded: Hub | undefined
  private pool!: VerifyPool
  private control: ControlServer | undefined
  private readonly listeners = new Set<(item: ChatItem) => void>()
  private presenceTimer: NodeJS.Timeout | undefined
  /** Other devices' presence, with their agents' states (kith-chat/1, Presence). */
  readonly presence = new PresenceBook()
  /** A presence is due because an agent's state changed (sent once the burst settles). */
  private presenceDue: NodeJS.Timeout | undefined
  /** When this node last answered a newcomer's presence with its own (ms). */
  private answeredAt = 0
  /** A newcomer's answer held back by presenceAnswerMs, sent at the window's end. */
  private answerTimer: NodeJS.Timeout | undefined
  /** Intake applies batches in the order they arrived (see intake). */
  private applying: Promise<void> = Promise.resolve()
  private readonly log: (line: string) => void
  private stopped = false
  /** Where `kith up` serves the web app (kith open), if it does. */
  webUrl: string | undefined
  /**
   * Set once this node's own grant book shows its device revoked after a hub refused it as such:
   * the node has no fleet to talk to.
   */
  removed: string | undefined
  /** Hubs that refused this device as revoked, with their words (a link each ends for good). */
  private readonly hubSaidRevoked = new Map<string, string>()
  /** Those words this node's grant book does not bear out (kith-hub, "AUTH"), by hub. */
  private readonly disputedRevocations = new Map<string, string>()
  private readonly bridge: AgentBridge
  private readonly outbox: OutboxPump
  private notifier: Notifier | undefined
  /** kith-e2e/1: seals what this node signs into channels, opens what intake admits. */
  readonly e2e: E2eKeys

  private constructor(
    readonly id: Identity,
    readonly fleet: string,
    private readonly opts: NodeOptions,
  ) {
    this.log = opts.log ?? (() => undefined)
    this.store = new NodeStore(id.home)
    this.book = new GrantBook(this.store.events, fleet, undefined, (e) =>
      this.store.enqueue(e, this.now()),
    )
    this.names = new Names(this.book.verifier, this.store.events, id.devicePubkey)
    this.channels = this.book.state.channels
    this.e2e = new E2eKeys({
      id,
      fleet,
      store: this.store,
      book: this.book,
      agentSecret: (pubkey) => this.bridge.agents.get(pubkey)?.secret,
      now: () => this.now(),
      log: this.log,
    })
    this.store.wireOf = (e) => this.e2e.wireOf(e)
    // What this node learns of the fleet's authority it passes on to every hub it links to
    // (kith-grants, "Propagation"), so a hub that missed a revocation gets it from any node.
    this.book.verifier.recordAccepted = true
    this.republishAuthority(this.book.allEventsInChainOrder())
    this.book.verifier.drainAccepted()
    this.book.verifier.drainPromoted()
    this.bridge = new AgentBridge(
      {
        id,
        store: this.store,
        book: this.book,
        names: this.names,
        links: this.links,
        log: this.log,
        now: () => this.now(),
        stopped: () => this.stopped,
        enqueue: (e) => this.store.enqueue(e, this.now()),
        sign: (t, s) => this.e2e.sign(t, s),
        seals: () => this.e2e.encrypts(),
        emit: (e) => this.emit(e),
        pump: () => {
          for (const link of this.links) this.pump(link)
        },
        agentStatesChanged: () => this.presenceChanged(),
        agentReport: (agent) => this.presence.hostOf(agent, Date.now()),
      },
      opts,
    )
    this.outbox = new OutboxPump(this.store, {
      // A private channel's definition in effect goes first to a hub that has not acknowledged it.
      prerequisites: (e, hub) => definitionsFirst(this.channels, this.store, e, hub, this.now()),
      now: () => this.now(),
      log: this.log,
      stopped: () => this.stopped,
      delivered: (id) => this.bridge.metrics.delivered(id),
    })
  }

  /** Agents this node hosts, by pubkey. Their secret keys stay in this process. */
  get agents(): Map<string, HostedAgent> {
    return this.bridge.agents
  }

  /** Per-turn host overhead of the agents hosted here (see TurnMetrics). */
  get turnMetrics(): { inMs: number; outMs: number; turnMs: number }[] {
    return this.bridge.metrics.turns
  }

  static async start(opts: NodeOptions): Promise<KithNode> {
    const id = loadIdentity(opts.home)
    const fleet = id.config.fleet
    if (fleet === undefined) {
      throw new KithError(
        'not-initialized',
        'this machine is in no fleet yet: kith init, or kith join CODE',
      )
    }
    const node = new KithNode(id, fleet, opts)
    try {
      await node.boot()
    } catch (err) {
      await node.stop()
      throw err
    }
    return node
  }

  private now(): number {
    return Math.floor(Date.now() / 1000)
  }

  private async boot(): Promise<void> {
    const { id } = this
    ensureOwnDeviceGrant({ id, fleet: this.fleet, book: this.book }, this.now())
    this.control = await startControlServer(join(id.home, controlSocketFile), {
      status: () => this.status(),
      send: (p) => this.sendChat(p),
      subscribe: (p, client) => this.subscribeClient(p, client),
      history: (p) => this.history(p),
      channels: () => this.store.channels(),
      decide: (p) => this.decide(p),
      cards: (p) => this.bridge.permissions.openCards(p),
      'cards-sealed': (p) => ({ count: this.bridge.permissions.sealedCards(p) }),
      cancel: (p) => this.cancelTurn(p),
      // kith chat: whether the agents of the turns it shows can still finish them.
      hosts: (p) => this.agentHosts(p),
      metrics: () => ({ turns: this.turnMetrics }),
      watch: (p, client) => this.bridge.frames.watch(p, client),
      // kith acp: the agent a name means here, and the machine whose grant hosts it.
      agent: (p) => this.agentInfo(p),
      // kith session (sessions.ts, session-control.ts).
      sessions: () => listSessions(this.store.events),
      'session-request': (p) => this.bridge.requestSession(p),
      'session-answer': (p) => this.bridge.sessionAnswer(p),
      // kith agent set changed who may use an agent, or its permissions: apply them now.
      'agents-changed': () => {
        // A new agent's grant was written to node.db by the same command: take it in first.
        this.book.reload()
        this.bridge.reloadSettings()
        return { ok: true }
      },
      // A CLI command changed grants in node.db: take them in and send them out.
      'grants-changed': () => {
        this.book.reload()
        const promoted = this.book.verifier.drainPromoted()
        if (promoted.length > 0) this.book.keep(promoted)
        this.republishAuthority(
          this.book.verifier.drainAccepted().flatMap((id) => {
            const e = this.book.event(id)
            return e === undefined ? [] : [e]
          }),
        )
        this.bridge.enforceMembership()
        // A fleet setting, or a device of this person paired: keys follow (kith-e2e/1).
        this.e2e.settingChanged()
        this.e2e.shareHistory()
        for (const link of this.links) this.pump(link)
        return { ok: true }
      },
    })
    this.pool = await VerifyPool.create(this.opts.verifyWorkers, { helpInline: true })
    this.log(`verifier: ${this.pool.description}`)
    let hubs = id.config.hubs
    if (hubs.length === 0) {
      this.embedded = await startHub({
        host: '127.0.0.1',
        port: this.opts.embedPort ?? defaultEmbeddedPort,
        dbPath: join(id.home, homeFiles.hubDb),
        founder: this.fleet,
        log: (l) => this.log(`hub: ${l}`),
        // One pool for node and hub: its workers start on demand and exit when idle.
        verifier: this.pool,
      })
      hubs = [this.embedded.url]
      this.log(`no hubs configured: embedded hub on ${this.embedded.url}`)
    }
    this.publishProfile()
    this.notifier = startNotifications({
      id,
      store: this.store,
      book: this.book,
      names: this.names,
      fleet: this.fleet,
      log: this.log,
      now: () => this.now(),
      webBase: () => this.webUrl,
      seals: () => this.e2e.encrypts(),
    })
    this.bridge.loadAgents()
    this.bridge.resumeJournal()
    for (const url of hubs) {
      const link = new HubLink({
        url,
        deviceSecret: id.deviceSecret,
        chain: () => this.book.chainEvents(id.devicePubkey, this.now()),
        kinds: followedKinds,
        fullKinds: vitalKinds,
        extraLive: [
          { kinds: [Kind.ObserverFrame], '#p': [id.devicePubkey], limit: 0 },
          { kinds: [Kind.Presence], limit: 0 },
        ],
        cursor: () => this.store.cursor(url),
        saveCursor: (since) => this.store.setCursor(url, since),
        authorityCursor: () => this.store.authorityCursor(url),
        saveAuthorityCursor: (since) => this.store.setAuthorityCursor(url, since),
        deliver: (events) => this.intake(events, url),
        localKeys: (filter) =>
          this.store.events.openCursor(filter, maxReconcileKeys, [], undefined),
        onLive: () => {
          this.log(`linked to ${url}`)
          this.e2e.shareHistory()
          this.pump(link)
          void this.sendPresence(link)
        },
        onCaughtUp: () => void this.applying.then(() => this.sealUnsetFleet()),
        onRevoked: (message) => {
          this.hubSaidRevoked.set(url, message)
          this.judgeHubRevocations()
        },
        log: this.log,
        ...(this.opts.pageSize === undefined ? {} : { pageSize: this.opts.pageSize }),
      })
      this.links.push(link)
      link.start()
    }
    this.presenceTimer = setInterval(
      () => this.broadcastPresence(),
      this.opts.presenceIntervalMs ?? presenceIntervalSeconds * 1000,
    )
    this.presenceTimer.unref()
  }

  /** The device's kind-0 profile, re-published only when its name changed. */
  private publishProfile(): void {
    const { id } = this
    const content = deviceProfileContent(id.config.name)
    const current = this.store.events.query(
      [{ kinds: [Kind.Profile], authors: [id.devicePubkey], limit: 1 }],
      {
        defaultLimit: 1,
        maxLimit: 1,
      },
    )[0]
    if (current !== undefined && (JSON.parse(current.raw) as NostrEvent).content === content) return
    const profile = signEvent(makeDeviceProfile(id.config.name, this.now()), id.deviceSecret)
    this.store.enqueue(profile, this.now())
  }

  /**
   * A fleet founded with an imported owner key (`kith init --owner-key-stdin`) signs no setting,
   * since the key may already lead a fleet. Its founder's node, once it has caught up with every
   * hub and found no setting that counts, signs "on" (kith-e2e/1, "Turning it on"), so such a
   * fleet is sealed too; an explicit "off" (kith init --plain, kith fleet encrypt off) stays.
   */
  private sealUnsetFleet(): void {
    const { id } = this
    if (this.stopped || id.ownerSecret === undefined || id.ownerPubkey !== this.fleet) return
    if (this.links.some((l) => l.lastSync === undefined)) return
    if (this.e2e.sealing().decidedBy !== undefined) return
    const now = this.now()
    const setting = signEvent(makeFleetSetting(this.fleet, true, now), id.ownerSecret)
    this.store.enqueue(setting, now)
    this.book.state.noteSetting(setting)
    this.e2e.settingChanged()
    this.log('this fleet had no encryption setting: signed "on" (kith fleet encrypt off to undo)')
    for (const link of this.links) this.pump(link)
  }

  /** This device's presence: online (with its agents' states) or offline. */
  private presenceEvent(status: 'online' | 'offline'): NostrEvent {
    const interval = Math.max(
      1,
      Math.round((this.opts.presenceIntervalMs ?? presenceIntervalSeconds * 1000) / 1000),
    )
    const agents = [...this.agents.values()].map((a) => ({
      pubkey: a.record.pubkey,
      state: reportedState(a.host.state),
    }))
    return signEvent(makePresence(status, agents, this.now(), interval), this.id.deviceSecret)
  }

  private sendPresence(link: HubLink, event = this.presenceEvent('online')): Promise<void> {
    return link.publish(event).then(
      (answer) => {
        if (!answer.ok) this.log(`presence refused by ${link.url}: ${answer.message}`)
      },
      (err: unknown) => this.log(`presence to ${link.url}: ${String(err)}`),
    )
  }

  private broadcastPresence(): void {
    if (this.stopped) return
    const event = this.presenceEvent('online')
    for (const link of this.links) if (link.authenticated) void this.sendPresence(link, event)
  }

  /** An agent's state changed: the fleet hears it once the burst settles (a turn starts many). */
  private presenceChanged(): void {
    if (this.stopped || this.presenceDue !== undefined) return
    this.presenceDue = setTimeout(() => {
      this.presenceDue = undefined
      this.broadcastPresence()
    }, presenceSettleMs)
    this.presenceDue.unref()
  }

  /**
   * For each agent asked about: whether it is still a member, and the device that last reported
   * hosting it with that device's presence now (kith-chat/1: offline once it said so, or after
   * 2.5 of its intervals without a word). A turn whose host is offline cannot finish there.
   */
  agentHosts(params: Record<string, unknown>): AgentHost[] {
    const asked = Array.isArray(params.agents) ? params.agents : []
    const nowMs = Date.now()
    return asked
      .filter((a): a is string => typeof a === 'string' && /^[0-9a-f]{64}$/.test(a))
      .slice(0, maxPresenceAgents)
      .map((agent) => {
        const member = this.book.verifier.isMember(agent, this.now()).ok
        if (this.agents.has(agent))
          return { agent, member, host: this.id.config.name, status: 'online' as const }
        const last = this.presence.lastHost(agent, nowMs)
        return {
          agent,
          member,
          host: last === undefined ? null : this.names.who(last.device).name,
          status: last?.status ?? 'unknown',
        }
      })
  }

  /** Which devices are up, with their agents' states, as this node knows them now. */
  devicePresence(): DevicePresence[] {
    return this.presence.all(Date.now())
  }

  private pump(link: HubLink): void {
    this.outbox.pump(link)
  }

  /**
   * Events from hubs: drop what is already stored, verify signatures off the main thread,
   * take grants and revocations first, then accept only what the grant chains allow now, and
   * store it. Refused and forged events are counted in the log, never stored or shown.
   */
  async intake(events: NostrEvent[], from?: string): Promise<void> {
    if (events.length === 0 || this.stopped) return
    // Batches are verified side by side but applied in the order they arrived (a link hands
    // live batches over without waiting), so an agent's reply never overtakes the prompt, the
    // progress or the card that came before it.
    const prior = this.applying
    let release!: () => void
    this.applying = new Promise<void>((r) => (release = r))
    try {
      await this.intakeInOrder(events, prior, from)
    } finally {
      release()
    }
  }

  private async intakeInOrder(
    events: NostrEvent[],
    prior: Promise<void>,
    from: string | undefined,
  ): Promise<void> {
    const known = this.store.events.knownIds(events.map((e) => e.id))
    const seen = new Set<string>()
    const fresh = events.filter((e) => {
      if (seen.has(e.id)) return false
      // A grant or revocation may be in node.db (written by a CLI command such as kith pair)
      // yet unknown to this process's verifier, so those are always offered to it; a definition
      // a hub returns also tells that the hub holds it.
      // A setting, too: one this node signed is in node.db before its state has seen it.
      const always =
        e.kind === Kind.Grant ||
        e.kind === Kind.Revocation ||
        e.kind === Kind.ChannelDefinition ||
        e.kind === Kind.FleetSetting
      if (known.has(e.id) && !always) return false
      seen.add(e.id)
      return true
    })
    if (fresh.length === 0) return
    const verdicts = await Promise.all(fresh.map((e) => this.pool.verify(e)))
    await prior
    if (this.stopped) return
    const valid = fresh.filter((_, i) => verdicts[i] === 'ok')
    // A hub that returned a definition holds it: events of that channel may go to it now.
    if (from !== undefined) {
      const held = valid.filter((e) => e.kind === Kind.ChannelDefinition).map((e) => e.id)
      if (held.length > 0) this.store.markHeld(held, from)
    }
    if (valid.length < fresh.length)
      this.log(`dropped ${fresh.length - valid.length} events with bad ids or signatures`)
    // The same admission a hub applies (grants first, then definitions, then the rest), so
    // whatever link an event came through, a node takes only what a hub would take.
    const now = this.now()
    // History too: what a since-revoked key signed while it stood is shown (as every device
    // shows it), never acted on.
    const results = this.book.state.admitBatch(valid, now, { keepPending: true, history: true })
    const admitted: NostrEvent[] = []
    const past = new Set<string>()
    let revoked = false
    for (const { event: e, admission } of results) {
      if (admission.ok && admission.past === true) past.add(e.id)
      if (!admission.ok) {
        if (
          e.kind === Kind.Grant ||
          e.kind === Kind.Revocation ||
          e.kind === Kind.ChannelDefinition
        )
          this.log(`ignored ${e.kind} ${e.id.slice(0, 12)}…: ${admission.error.message}`)
        continue
      }
      revoked ||= admission.revoked
      if (!admission.store) continue
      if (isEphemeralKind(e.kind)) {
        if (e.kind === Kind.Presence && e.pubkey !== this.id.devicePubkey) {
          // A device this node had not heard from (just started, or back): it hears this
          // node's presence at once rather than within an interval.
          if (this.presence.receive(e, Date.now())) this.answerNewcomer()
        }
        if (e.kind === Kind.ObserverFrame) this.bridge.frames.receiveFrame(e)
        continue
      }
      admitted.push(e)
    }
    if (admitted.length === 0) return
    // Sealed events are opened here (their keys first): node.db, chat and agents see them opened.
    const accepted = this.e2e.open(admitted)
    const outcomes = this.book.keep(accepted)
    // What waited for these and is placed now was kept in memory only: it is stored now.
    const promoted = this.book.verifier.drainPromoted()
    if (promoted.length > 0) this.book.keep(promoted)
    this.republishAuthority(
      this.book.verifier.drainAccepted().flatMap((id) => {
        const e = accepted.find((x) => x.id === id) ?? this.book.event(id)
        return e === undefined ? [] : [e]
      }),
    )
    if (revoked || results.some((r) => r.admission.ok && r.admission.authority)) {
      this.bridge.enforceMembership()
      this.e2e.shareHistory()
      this.judgeHubRevocations()
    }
    const handOff = (e: NostrEvent, act = true) => {
      if (
        e.kind === Kind.ChatMessage ||
        e.kind === Kind.PermissionRequest ||
        e.kind === Kind.PermissionDecision
      ) {
        this.emit(e)
      }
      if (e.kind === Kind.PushSubscription) this.notifier?.observe(e)
      if (!act) return
      if (e.kind === Kind.ChatMessage) this.bridge.dispatch(e)
      if (e.kind === Kind.PermissionDecision) this.bridge.permissions.applyDecision(e)
      if (e.kind === Kind.AgentControl) this.bridge.applyControl(e)
      if (e.kind === Kind.SessionControl) this.bridge.applySessionControl(e)
    }
    accepted.forEach((e, i) => {
      // Still sealed (no key yet, or refused): kept, never shown or acted on as it stands.
      if (outcomes[i] === 'stored' && !isSealed(e)) handOff(e, !past.has(admitted[i]!.id))
    })
    // Events that waited for a key that just came: shown; acted on while still fresh.
    for (const e of this.e2e.reopen()) {
      handOff(e, Math.abs(now - e.created_at) <= e2eFreshSeconds)
    }
  }

  /**
   * Queues grants and revocations for every hub that has not answered them yet, parents first;
   * a hub that already has one answers `duplicate`.
   */
  private republishAuthority(events: readonly NostrEvent[]): void {
    if (events.length === 0) return
    const now = this.now()
    for (const e of events) this.store.enqueue(e, now)
    for (const link of this.links) this.pump(link)
  }

  /** Every chat message, card and decision this node takes in or makes passes here. */
  private emit(event: NostrEvent): void {
    this.notifier?.observe(event)
    if (this.listeners.size === 0) return
    const item: ChatItem = chatItem(this.store, this.names, event)
    for (const fn of this.listeners) fn(item)
  }

  onChat(fn: (item: ChatItem) => void): () => void {
    this.listeners.add(fn)
    return () => this.listeners.delete(fn)
  }

  /** Signs and queues a chat message, then waits (briefly) for the first hub's answer. */
  async sendChat(
    params: Record<string, unknown>,
  ): Promise<{ event: NostrEvent; deliveries: unknown[] }> {
    const channel = params.channel
    const text = params.text
    if (typeof channel !== 'string' || typeof text !== 'string') {
      throw new KithError('usage', 'send needs channel and text')
    }
    if (this.removed !== undefined) {
      throw new KithError(
        'restricted',
        `this device was removed from the fleet (${this.removed}); nothing can be sent. ` +
          'Ask the fleet founder or an admin, or start over with kith init.',
      )
    }
    if (!this.channels.isMember(this.id.devicePubkey, channel, this.now()))
      throw new KithError(
        'restricted',
        `#${channel} is private and you are not a member: ask its creator or an admin (kith channel members '#${channel}')`,
      )
    const event = buildChat(
      this.id,
      this.names,
      this.store,
      {
        channel,
        text,
        ...(typeof params.reply === 'string' ? { reply: params.reply } : {}),
        ...(params.interrupt === true ? { interrupt: true } : {}),
        // kith session new: where the agent's new session starts.
        ...(params.session === undefined
          ? {}
          : { extraTags: sessionStartTags(sessionStartOf(params.session)) }),
      },
      (t, s) => this.e2e.sign(t, s),
    )
    // Shown and dispatched (to agents hosted here) before any hub answers; with no hub
    // connected there is nobody to wait for: it is queued, and says so at once.
    const sent = this.outbox.send(
      event,
      this.links,
      typeof params.waitMs === 'number' ? params.waitMs : sendWaitMs,
    )
    this.emit(event)
    this.bridge.dispatch(event)
    const d = await sent
    return { event, deliveries: d === undefined ? [] : [d] }
  }

  private subscribeClient(
    params: Record<string, unknown>,
    client: ControlClientHandle,
  ): { ok: true } {
    const channel = typeof params.channel === 'string' ? params.channel : undefined
    const off = this.onChat((item) => {
      if (channel === undefined || item.channel === channel) client.notify('chat', item)
    })
    client.onClose(off)
    return { ok: true }
  }

  history(params: Record<string, unknown>): ChatItem[] {
    return chatHistory(this.store, this.names, params)
  }

  /** Signs and sends a decision from this device (kith permit, /allow in kith chat). */
  decide(params: Record<string, unknown>): ReturnType<AgentBridge['permissions']['decide']> {
    return this.bridge.permissions.decide(params)
  }

  /** kith acp: the agent a name means here, and the machine that reports hosting it (presence). */
  agentInfo(params: Record<string, unknown>): {
    pubkey: string
    name: string
    host: string | null
  } {
    if (typeof params.name !== 'string') throw new KithError('usage', 'agent needs a name')
    const pubkey = resolveAgent(this.names, params.name, this.id.devicePubkey)
    const report = this.presence.hostOf(pubkey, Date.now())
    return {
      pubkey,
      name: this.names.who(pubkey).name,
      host: report === undefined ? null : this.names.who(report.device).name,
    }
  }

  /** Sends a cancel (kind 4144) for the agents working in `channel` (all, or one by name). */
  cancelTurn(params: Record<string, unknown>): { event: NostrEvent; prompts: number } {
    return this.bridge.cancelTurn(params)
  }

  /**
   * A hub's `restricted: revoked` is checked against this node's own grant book (judgeHubRevoked):
   * borne out, the device was removed: agents are retired and nothing more is sent. Not borne
   * out, only that hub's link has ended: said loudly (log and kith status), agents stay. Run when
   * a hub says it and again whenever the book learns authority (a revocation that a hub sends
   * before cutting the link may arrive after its refusal).
   */
  private judgeHubRevocations(): void {
    if (this.removed !== undefined || this.hubSaidRevoked.size === 0) return
    const verdict = judgeHubRevoked(this.book.verifier, this.id.devicePubkey, this.now())
    if (verdict.verified) {
      this.disputedRevocations.clear()
      const [url, message] = [...this.hubSaidRevoked][0]!
      this.log(
        `${url} refused this device: ${message}. This device was removed from the fleet ` +
          `(${verdict.reason}, as this node's grant book shows); it will not reconnect. Nothing more will be sent.`,
      )
      this.removed = message
      // Nothing its agents say can reach anyone now: stop them (no orphan, no signing).
      this.bridge.retireAll('this device was removed from the fleet')
      return
    }
    for (const [url, message] of this.hubSaidRevoked) {
      if (this.disputedRevocations.has(url)) continue
      this.disputedRevocations.set(url, message)
      this.log(
        `WARNING: ${url} says this device is revoked (${message}), but ${verdict.reason}. ` +
          'Only the link to that hub has ended; hosted agents keep running and other hubs are used. ' +
          'If this device was removed, the revocation will reach this node through the fleet.',
      )
    }
  }

  status(): {
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
    agents: unknown[]
    devices: DeviceStatus[]
    refused: unknown[]
    notify: TargetStatus[]
  } {
    return {
      device: this.id.devicePubkey,
      name: this.id.config.name,
      fleet: this.fleet,
      embeddedHub: this.embedded?.url ?? null,
      web: this.webUrl ?? null,
      removed: this.removed ?? null,
      disputedRevocations: [...this.disputedRevocations].map(([url, message]) => ({
        url,
        message,
      })),
      encrypt: this.e2e.encrypts(),
      sealLapse: sealingLapse(this.e2e.sealing()) ?? null,
      hubs: this.links.map((l) => ({
        url: l.url,
        state: l.state,
        lagMs: l.rttMs ?? null,
        cursor: this.store.cursor(l.url) ?? null,
        outbox: this.store.pendingFor(l.url).length,
        lastError: l.lastError ?? null,
        lastSync: l.lastSync ?? null,
      })),
      outbox: this.store.outboxDepth(this.links.map((l) => l.url)),
      agents: [...this.agents.values()].map((a) => ({
        name: a.record.name,
        state: a.host.state,
        adapter: a.host.info,
        queue: a.host.queueDepth,
        crashes: a.host.crashes,
        sessions: this.store.agentSessionCount(a.record.pubkey),
      })),
      devices: this.deviceStatus(),
      refused: this.store
        .refusals()
        .map((r) => ({ event: r.eventId, hub: r.hub, message: r.message })),
      notify: notifyStatus(this.store),
    }
  }

  /**
   * Every device of the fleet (members now) with its presence as this node knows it, and the
   * agents each reports hosting with their states; this device first.
   */
  deviceStatus(): DeviceStatus[] {
    const nowMs = Date.now()
    const now = this.now()
    const v = this.book.verifier
    const devices = [
      ...new Set(
        v
          .allGrants()
          .filter((g) => g.role === 'device' && v.isMember(g.subject, now).ok)
          .map((g) => g.subject),
      ),
    ]
    const named = (pubkey: string, state: string) => ({
      name: this.names.who(pubkey).name,
      pubkey,
      state,
    })
    const rows = devices.map((pubkey): DeviceStatus => {
      const who = this.names.who(pubkey)
      const base = {
        name: who.name,
        pubkey,
        person: who.mine ? null : (who.person ?? null),
        self: pubkey === this.id.devicePubkey,
      }
      if (base.self)
        return {
          ...base,
          presence: 'online',
          lastSeenSeconds: 0,
          agents: [...this.agents.values()].map((a) =>
            named(a.record.pubkey, reportedState(a.host.state)),
          ),
        }
      const p = this.presence.get(pubkey, nowMs)
      return {
        ...base,
        presence: p?.status ?? 'unknown',
        lastSeenSeconds: p === undefined ? null : Math.round((nowMs - p.heardAt) / 1000),
        agents: (p?.agents ?? []).map((a) => named(a.pubkey, a.state)),
      }
    })
    return rows.sort((a, b) => Number(b.self) - Number(a.self) || a.name.localeCompare(b.name))
  }

  /**
   * Stops within a second or two whatever is attached: clients are told and let go first, links
   * close, then agents (each given its cancel grace) and the embedded hub stop side by side.
   */
  /**
   * Answers a newcomer's presence with this node's own: at once, or (when it answered another
   * within presenceAnswerMs) once at that window's end, never dropped. A second device that
   * appeared within 5 s of the first once heard nothing until this node's next interval.
   */
  private answerNewcomer(): void {
    const send = () => {
      this.answerTimer = undefined
      this.answeredAt = Date.now()
      this.broadcastPresence()
    }
    const wait = this.answeredAt + presenceAnswerMs - Date.now()
    if (wait <= 0) send()
    else this.answerTimer ??= setTimeout(send, wait)
  }

  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    clearInterval(this.presenceTimer)
    clearTimeout(this.answerTimer)
    clearTimeout(this.presenceDue)
    const notifierStopped = this.notifier?.stop()
    await this.control?.close()
    // Said before the links close, so the fleet sees this device go at once (bounded: a hub
    // that does not answer must not hold the stop).
    const offline = this.presenceEvent('offline')
    await Promise.race([
      Promise.all(
        this.links.filter((l) => l.authenticated).map((l) => this.sendPresence(l, offline)),
      ),
      new Promise((r) => setTimeout(r, offlinePresenceWaitMs).unref()),
    ])
    for (const link of this.links) link.stop()
    await Promise.all([this.bridge.stop(), this.embedded?.close()])
    await this.pool?.close()
    await notifierStopped
    this.store.close()
  }
}
