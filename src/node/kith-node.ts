import { join } from 'node:path'
import { KithError } from '../errors.js'
import { signEvent, type NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { followKinds } from '../events/follow-kinds.js'
import { startHub, type Hub } from '../hub/server.js'
import { VerifyPool } from '../verify/pool.js'
import { homeFiles } from '../identity/home.js'
import { loadIdentity, type Identity } from '../identity/keys.js'
import { HubLink } from '../link/hub-link.js'
import { NodeStore } from '../store/node-store.js'
import { OutboxPump } from './outbox-pump.js'
import { startNotifications } from './notifications.js'
import type { Notifier } from '../notify/notifier.js'
import { E2eKeys } from './e2e-keys.js'
import { makeFleetSetting } from '../events/e2e-setting.js'
import { judgeHubRevoked } from '../grants/hub-revoked.js'
import { AgentBridge, type AgentBridgeOptions } from './agent-bridge.js'
import { buildChat, chatHistory, chatItem, type ChatItem } from './chat-store.js'
import { checkedHandlers, startControlServer, type ControlServer } from './control.js'
import type { ControlParams, ControlResult } from './control-methods.js'
import { controlHandlers } from './control-handlers.js'
import { ensureOwnDeviceGrant } from './fleet.js'
import { definitionsFirst } from './channel-sync.js'
import { GrantBook } from './grant-book.js'
import { Names } from '../grants/names.js'
import { NodePresence } from './presence.js'
import type { HostedAgent } from './node-context.js'
import type { ChannelBook } from '../grants/channels.js'
import { sessionStartTags } from '../events/session-start.js'
import { deviceProfileContent, makeDeviceProfile } from '../events/profile.js'
import { offlinePresenceWaitMs, sendWaitMs } from './timings.js'
import { nodeStatus, type NodeStatus } from './node-status.js'
import type { IntakeContext } from './intake/context.js'
import { newBatch } from './intake/batch.js'
import { runIntake } from './intake/stages.js'

export const controlSocketFile = homeFiles.controlSocket
export const defaultEmbeddedPort = 7447

/** Stored events a reconciliation with a hub covers at most (the hub's own limit is 500,000). */
const maxReconcileKeys = 500_000

/** What a node follows and fetches whole, and why it differs from a browser: events/follow-kinds.ts. */
const follows = followKinds('node')

export interface NodeOptions extends AgentBridgeOptions {
  home: string
  log?: (line: string) => void
  /** Port of the embedded hub when no hub is configured (0 picks one). */
  embedPort?: number
  pageSize?: number
  presenceIntervalMs?: number
  verifyWorkers?: number
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
  /** This device's presence and what it hears of the others' (presence.ts). */
  readonly presence: NodePresence
  /** What the intake stages use of this node (intake/context.ts). */
  private readonly intakeContext: IntakeContext
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
  /** The agents hosted here: prompts, cards, cancels, sessions, frames (agent-bridge.ts). */
  readonly bridge: AgentBridge
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
    this.names = new Names(this.book.verifier, this.store.reads, id.devicePubkey)
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
        agentStatesChanged: () => this.presence.changed(),
        agentReport: (agent) => this.presence.book.hostOf(agent, Date.now()),
      },
      opts,
    )
    this.presence = new NodePresence({
      deviceSecret: id.deviceSecret,
      devicePubkey: id.devicePubkey,
      links: this.links,
      hostedAgents: () =>
        [...this.agents.values()].map((a) => ({ pubkey: a.record.pubkey, state: a.host.state })),
      now: () => this.now(),
      stopped: () => this.stopped,
      log: this.log,
      ...(opts.presenceIntervalMs === undefined ? {} : { intervalMs: opts.presenceIntervalMs }),
    })
    this.intakeContext = {
      store: this.store,
      book: this.book,
      e2e: this.e2e,
      verify: (e) => this.pool.verify(e),
      log: this.log,
      now: () => this.now(),
      stopped: () => this.stopped,
      republish: (events) => this.republishAuthority(events),
      authorityChanged: () => {
        this.bridge.enforceMembership()
        this.e2e.shareHistory()
        this.judgeHubRevocations()
      },
      targets: {
        show: (e) => this.emit(e),
        observePush: (e) => this.notifier?.observe(e),
        dispatch: (e) => this.bridge.dispatch(e),
        applyDecision: (e) => this.bridge.permissions.applyDecision(e),
        applyControl: (e) => this.bridge.applyControl(e),
        applySessionControl: (e) => this.bridge.applySessionControl(e),
        presence: (e) => this.presence.receive(e),
        frame: (e) => this.bridge.frames.receiveFrame(e),
      },
    }
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
    this.control = await startControlServer(
      join(id.home, controlSocketFile),
      checkedHandlers(controlHandlers(this)),
    )
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
        kinds: follows.kinds,
        fullKinds: follows.fullKinds,
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
          void this.presence.send(link)
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
    this.presence.start()
  }

  /** kith agent add/set changed who may use an agent, or its permissions: applied now. */
  agentsChanged(): void {
    // A new agent's grant was written to node.db by the same command: take it in first.
    this.book.reload()
    this.bridge.reloadSettings()
  }

  /** A CLI command changed grants in node.db: taken in and sent out. */
  grantsChanged(): void {
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
  }

  /** The device's kind-0 profile, re-published only when its name changed. */
  private publishProfile(): void {
    const { id } = this
    const content = deviceProfileContent(id.config.name)
    const current = this.store.reads.newest({ kinds: [Kind.Profile], authors: [id.devicePubkey] })
    if (current !== undefined && current.content === content) return
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

  private pump(link: HubLink): void {
    this.outbox.pump(link)
  }

  /**
   * Events from hubs, through the intake stages (intake/stages.ts: dedupe, verify, wait for
   * order, admit, open, keep, republish, enforce, hand off). Refused and forged events are
   * counted in the log, never stored or shown.
   */
  async intake(events: NostrEvent[], from?: string): Promise<void> {
    if (events.length === 0 || this.stopped) return
    // Batches are verified side by side but applied in the order they arrived (the stage
    // "wait for order" waits for the batch before).
    const prior = this.applying
    let release!: () => void
    this.applying = new Promise<void>((r) => (release = r))
    try {
      await runIntake(newBatch(events, from, prior), this.intakeContext)
    } finally {
      release()
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
  async sendChat(params: ControlParams<'send'>): Promise<ControlResult<'send'>> {
    const { channel, text } = params
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
        ...(params.reply === undefined ? {} : { reply: params.reply }),
        ...(params.interrupt === true ? { interrupt: true } : {}),
        // kith session new: where the agent's new session starts.
        ...(params.session === undefined ? {} : { extraTags: sessionStartTags(params.session) }),
      },
      (t, s) => this.e2e.sign(t, s),
    )
    // Shown and dispatched (to agents hosted here) before any hub answers; with no hub
    // connected there is nobody to wait for: it is queued, and says so at once.
    const sent = this.outbox.send(event, this.links, params.waitMs ?? sendWaitMs)
    this.emit(event)
    this.bridge.dispatch(event)
    const d = await sent
    return { event, deliveries: d === undefined ? [] : [d] }
  }

  history(params: ControlParams<'history'>): ChatItem[] {
    return chatHistory(this.store, this.names, params)
  }

  /** Signs and sends a decision from this device (kith permit, /allow in kith chat). */
  decide(params: ControlParams<'decide'>): ControlResult<'decide'> {
    return this.bridge.permissions.decide(params)
  }

  /** Sends a cancel (kind 4144) for the agents working in `channel` (all, or one by name). */
  cancelTurn(params: ControlParams<'cancel'>): ControlResult<'cancel'> {
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

  /** `kith status` (node-status.ts). */
  status(): NodeStatus {
    return nodeStatus(this, this.disputedRevocations)
  }

  /**
   * Stops within a second or two whatever is attached: clients are told and let go first, links
   * close, then agents (each given its cancel grace) and the embedded hub stop side by side.
   */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    this.presence.stopTimers()
    const notifierStopped = this.notifier?.stop()
    await this.control?.close()
    // Said before the links close, so the fleet sees this device go at once (bounded: a hub
    // that does not answer must not hold the stop).
    await this.presence.sayOffline(offlinePresenceWaitMs)
    for (const link of this.links) link.stop()
    await Promise.all([this.bridge.stop(), this.embedded?.close()])
    await this.pool?.close()
    await notifierStopped
    this.store.close()
  }
}
