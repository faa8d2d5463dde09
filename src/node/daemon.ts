import { join } from 'node:path'
import type { Server } from 'node:net'
import { KithError } from '../errors.js'
import { makeChatMessage, mentionedNames, channelOf } from '../events/chat.js'
import { signEvent, type NostrEvent } from '../events/event.js'
import { isEphemeralKind, Kind } from '../events/kinds.js'
import { startHub, type Hub } from '../hub/server.js'
import { VerifyPool } from '../hub/verify-pool.js'
import { loadIdentity, type Identity } from '../identity/keys.js'
import { HubLink } from '../link/hub-link.js'
import { NodeStore } from '../store/node-store.js'
import { startControlServer, type ControlClientHandle } from './control.js'
import { ensureOwnDeviceGrant } from './fleet.js'
import { GrantBook } from './grant-book.js'
import { Names, type Who } from './names.js'
import { AgentHost, type PromptJob } from '../acp/host.js'
import { reapLeftover } from '../acp/process-group.js'
import { ChannelBook } from '../grants/channels.js'
import { personOf } from '../grants/members.js'
import { describePolicy, policyAllows } from '../grants/policy.js'
import type { PermissionAnswer, PermissionAsk } from '../acp/agent-process.js'
import {
  decrypt as nip44Decrypt,
  encrypt as nip44Encrypt,
  getConversationKey,
} from 'nostr-tools/nip44'
import { listAgentRecords, readAgentSecret, type AgentRecord } from '../identity/agents.js'

export const controlSocketFile = 'node.sock'
export const defaultEmbeddedPort = 7447

/** Kinds a node follows: chat, permission requests/decisions, agent control. */
const followedKinds = [
  Kind.ChatMessage,
  Kind.PermissionRequest,
  Kind.PermissionDecision,
  Kind.AgentControl,
]
/** Fetched whole on every connect. */
const vitalKinds = [Kind.Profile, Kind.Grant, Kind.Revocation, Kind.ChannelDefinition]

export interface NodeOptions {
  home: string
  /** How long a permission request waits for a person before it is answered cancelled. */
  permissionTimeoutMs?: number
  /** After a cancel, how long an agent may take to end its turn before it is killed. */
  cancelGraceMs?: number
  /** Agent watchdog: a silent turn ends after this long (default 15 min)… */
  agentIdleTimeoutMs?: number
  /** …and no turn runs longer than this (default 2 h). */
  agentTurnCapMs?: number
  log?: (line: string) => void
  /** Port of the embedded hub when no hub is configured (0 picks one). */
  embedPort?: number
  pageSize?: number
  presenceIntervalMs?: number
  verifyWorkers?: number
}

export interface ChatItem {
  event: NostrEvent
  from: Who
  channel: string | undefined
}

/** A coalesced slice of an agent turn's session/update stream. */
export interface WatchFrame {
  agent: Who
  channel: string
  prompt: string
  updates: unknown[]
}

export interface LinkStatus {
  url: string
  state: string
  lagMs: number | null
  cursor: number | null
  outbox: number
  lastError: string | null
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
  private control: Server | undefined
  private readonly listeners = new Set<(item: ChatItem) => void>()
  private readonly pumping = new Set<string>()
  private presenceTimer: NodeJS.Timeout | undefined
  readonly presence = new Map<string, { status: string; at: number }>()
  private readonly log: (line: string) => void
  private stopped = false
  /** Agents this node hosts, by pubkey. Their secret keys stay in this process. */
  readonly agents = new Map<string, { record: AgentRecord; host: AgentHost; secret: Uint8Array }>()
  /**
   * Per-turn host overhead (ms): accepted prompt → session/prompt sent ("in"), and stopReason →
   * reply acknowledged by a hub ("out"); the last 1,000 turns, for `npm run bench:agent`.
   */
  readonly turnMetrics: { inMs: number; outMs: number; turnMs: number }[] = []
  private readonly pendingReplyTiming = new Map<
    string,
    { receivedAt: number; promptSentAt: number; stopAt: number }
  >()
  /** Permission requests (kind 4142) of hosted agents waiting for a decision (4143). */
  private readonly pendingPermissions = new Map<
    string,
    {
      agent: string
      /** The prompt whose turn asked; refusals are threaded under it. */
      question: NostrEvent
      channel: string
      options: PermissionAsk['options']
      resolve: (a: PermissionAnswer) => void
      timer: NodeJS.Timeout
    }
  >()

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
    this.names = new Names(this.book.verifier, this.store.events)
    this.channels = new ChannelBook(this.book.verifier)
    for (const e of this.store.events.eventsOfKind(Kind.ChannelDefinition)) this.channels.add(e)
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
      decide: (p) => this.decide(p),
      cancel: (p) => this.cancelTurn(p),
      metrics: () => ({ turns: this.turnMetrics }),
      watch: (p, client) => {
        const agent = typeof p.agent === 'string' ? p.agent.toLowerCase() : undefined
        const fn = (frame: WatchFrame) => {
          if (agent === undefined || frame.agent.name.toLowerCase() === agent)
            client.notify('frame', frame)
        }
        this.watchers.add(fn)
        client.onClose(() => this.watchers.delete(fn))
        return { ok: true }
      },
      // kith agent set changed who may use an agent, or its permissions: apply them now.
      'agents-changed': () => {
        for (const record of listAgentRecords(this.id.home)) {
          const agent = this.agents.get(record.pubkey)
          if (agent === undefined) continue
          agent.record = record
          agent.host.setPermissions(record.permissions ?? 'ask')
          this.log(`agent ${record.name}: settings updated`)
        }
        return { ok: true }
      },
      // A CLI command changed grants in node.db: take them in and send them out.
      'grants-changed': () => {
        this.book.reload()
        this.enforceMembership()
        for (const link of this.links) this.pump(link)
        return { ok: true }
      },
    })
    this.pool = await VerifyPool.create(this.opts.verifyWorkers)
    let hubs = id.config.hubs
    if (hubs.length === 0) {
      this.embedded = await startHub({
        host: '127.0.0.1',
        port: this.opts.embedPort ?? defaultEmbeddedPort,
        dbPath: join(id.home, 'hub.db'),
        founder: this.fleet,
        log: (l) => this.log(`hub: ${l}`),
        ...(this.opts.verifyWorkers === undefined
          ? {}
          : { verifyWorkers: this.opts.verifyWorkers }),
      })
      hubs = [this.embedded.url]
      this.log(`no hubs configured: embedded hub on ${this.embedded.url}`)
    }
    this.publishProfile()
    this.loadAgents()
    for (const url of hubs) {
      const link = new HubLink({
        url,
        deviceSecret: id.deviceSecret,
        chain: () => this.book.chainEvents(id.devicePubkey, this.now()),
        kinds: followedKinds,
        fullKinds: vitalKinds,
        extraLive: [{ kinds: [Kind.ObserverFrame], '#p': [id.devicePubkey], limit: 0 }],
        cursor: () => this.store.cursor(url),
        saveCursor: (since) => this.store.setCursor(url, since),
        deliver: (events) => this.intake(events),
        onLive: () => {
          this.log(`linked to ${url}`)
          this.pump(link)
          this.sendPresence(link)
        },
        log: this.log,
        ...(this.opts.pageSize === undefined ? {} : { pageSize: this.opts.pageSize }),
      })
      this.links.push(link)
      link.start()
    }
    this.presenceTimer = setInterval(() => {
      for (const link of this.links) if (link.authenticated) this.sendPresence(link)
    }, this.opts.presenceIntervalMs ?? 60_000)
    this.presenceTimer.unref()
  }

  /** Agents with a command are spawned on first use; the key only ever lives in this process. */
  private loadAgents(): void {
    for (const record of listAgentRecords(this.id.home)) {
      if (record.command === undefined) continue
      const secret = readAgentSecret(this.id.home, record.name)
      if (secret === undefined) {
        this.log(`agent ${record.name}: key file missing; not started`)
        continue
      }
      const pidPath = join(this.id.home, 'agents', `${record.name}.pid`)
      const leftover = reapLeftover(pidPath, record.command[0] ?? '')
      if (leftover !== undefined)
        this.log(
          `agent ${record.name}: stopped its process left from an earlier run (pid ${leftover})`,
        )
      const host = new AgentHost(
        record.name,
        {
          argv: record.command,
          cwd: record.cwd ?? this.id.home,
          logPath: join(this.id.home, 'agents', `${record.name}.log`),
          pidPath,
          ...(record.env === undefined ? {} : { env: record.env }),
        },
        this.log,
        {
          sessions: {
            get: (channel) => this.store.agentSession(record.pubkey, channel),
            set: (channel, session) => this.store.setAgentSession(record.pubkey, channel, session),
          },
          permissions: record.permissions ?? 'ask',
          onNewSession: (channel, reason) =>
            this.noticeAs(
              record.pubkey,
              channel,
              `ℹ ${record.name} started a new session in #${channel}: ${reason}`,
            ),
          ...(this.opts.agentIdleTimeoutMs === undefined
            ? {}
            : { idleTimeoutMs: this.opts.agentIdleTimeoutMs }),
          ...(this.opts.agentTurnCapMs === undefined
            ? {}
            : { turnCapMs: this.opts.agentTurnCapMs }),
        },
      )
      this.agents.set(record.pubkey, { record, host, secret })
      this.log(`hosting agent ${record.name} (${record.command.join(' ')})`)
    }
  }

  /** The person (owner key) a key belongs to: the top owner of its chain, or the founder. */
  private ownerOf(pubkey: string): string | undefined {
    return personOf(this.book.verifier, pubkey, this.now())
  }

  /** Whether `key` may act on `agent` under one of its policies (prompt or approve). */
  private mayUse(
    agent: { record: AgentRecord },
    key: string,
    which: 'allow' | 'approvers',
  ): boolean {
    return policyAllows(
      agent.record[which],
      { key, person: this.ownerOf(key) },
      this.ownerOf(agent.record.pubkey),
    )
  }

  /**
   * After grants change: a key that is no longer a member loses its queued prompts (each dropped
   * with a visible notice) and its running turns (cancelled), on every agent hosted here.
   */
  private enforceMembership(): void {
    const gone = (job: PromptJob) =>
      job.from !== undefined && !this.book.verifier.isMember(job.from, this.now()).ok
    for (const agent of this.agents.values()) {
      for (const job of agent.host.dropQueued(gone)) {
        job.done({ ok: false, message: 'dropped: its author is no longer a member of this fleet' })
      }
      for (const job of agent.host.runningJobs()) {
        if (!gone(job)) continue
        this.log(
          `cancelling ${agent.record.name}'s turn in #${job.channel}: its author was removed`,
        )
        this.cancelPending(agent.record.pubkey, job.channel)
        agent.host.cancel(job.channel, this.opts.cancelGraceMs)
      }
    }
  }

  /**
   * A chat message that mentions (p tag) an agent hosted here becomes a prompt, if the agent's
   * policy allows its author; otherwise a one-line refusal is posted. Never silence.
   */
  private dispatch(event: NostrEvent): void {
    if (event.kind !== Kind.ChatMessage) return
    const channel = channelOf(event)
    if (channel === undefined) return
    for (const tag of event.tags) {
      if (tag[0] !== 'p' || tag[1] === undefined) continue
      const agent = this.agents.get(tag[1])
      if (agent === undefined || event.pubkey === tag[1] || this.agents.has(event.pubkey)) continue
      if (!this.mayUse(agent, event.pubkey, 'allow')) {
        this.replyAs(
          agent,
          event,
          `⚠ ${agent.record.name} does not take your prompts: its policy allows ${describePolicy(agent.record.allow)} (kith agent add --allow)`,
        )
        continue
      }
      const text = event.content
        .replace(new RegExp(`@${agent.record.name}(?![\\w-])`, 'gi'), '')
        .trim()
      const receivedAt = performance.now()
      const timing: { promptSentAt?: number; stopAt?: number } = {}
      agent.host.enqueue({
        channel,
        text,
        from: event.pubkey,
        timing,
        permission: (ask) => this.askPermission(agent, event, ask),
        update: (u) => this.observe(agent, event, u),
        done: (outcome) => {
          const reply = this.replyAs(
            agent,
            event,
            outcome.ok
              ? outcome.text
              : outcome.message.startsWith('turn cancelled')
                ? `⏹ ${agent.record.name}: ${outcome.message}`
                : `⚠ ${agent.record.name} did not answer: ${outcome.message}`,
          )
          if (
            reply &&
            outcome.ok &&
            timing.promptSentAt !== undefined &&
            timing.stopAt !== undefined
          ) {
            this.pendingReplyTiming.set(reply.id, {
              receivedAt,
              promptSentAt: timing.promptSentAt,
              stopAt: timing.stopAt,
            })
          }
        },
      })
    }
  }

  /**
   * Turns an agent's permission request into a kind-4142 event (signed by the agent, threaded
   * under the prompt) and waits for a kind-4143 decision from a person allowed to approve; a
   * timeout answers cancelled, visibly.
   */
  private askPermission(
    agent: { record: AgentRecord; secret: Uint8Array },
    question: NostrEvent,
    ask: PermissionAsk,
  ): Promise<PermissionAnswer> {
    const timeoutMs = this.opts.permissionTimeoutMs ?? 5 * 60_000
    const request = signEvent(
      {
        kind: Kind.PermissionRequest,
        created_at: this.now(),
        tags: [
          ['h', channelOf(question) ?? 'general'],
          ['e', question.id, '', 'root'],
          ['p', question.pubkey],
        ],
        content: JSON.stringify({
          title: ask.title,
          toolKind: ask.toolKind,
          options: ask.options,
          expires: this.now() + Math.ceil(timeoutMs / 1000),
        }),
      },
      agent.secret,
    )
    return new Promise<PermissionAnswer>((resolve) => {
      const timer = setTimeout(() => {
        this.pendingPermissions.delete(request.id)
        resolve('cancelled')
        this.replyAs(
          agent,
          question,
          `⏱ permission request for "${ask.title}" timed out; the tool call was cancelled`,
        )
      }, timeoutMs)
      timer.unref()
      this.pendingPermissions.set(request.id, {
        agent: agent.record.pubkey,
        question,
        channel: channelOf(question) ?? 'general',
        options: ask.options,
        resolve,
        timer,
      })
      this.store.enqueue(request, this.now())
      this.emit(request)
      for (const link of this.links) this.pump(link)
    })
  }

  /** A kind-4143 decision: answers the pending request if its author may approve for the agent. */
  private applyDecision(decision: NostrEvent): void {
    const requestId = decision.tags.find((t) => t[0] === 'e')?.[1]
    const pending = requestId === undefined ? undefined : this.pendingPermissions.get(requestId)
    if (pending === undefined || requestId === undefined) return
    const agent = this.agents.get(pending.agent)
    if (agent === undefined) return
    if (!this.mayUse(agent, decision.pubkey, 'approvers')) {
      this.replyAs(
        agent,
        pending.question,
        `⚠ ${this.names.who(decision.pubkey).name} may not approve ${agent.record.name}'s tool calls: its approvers are ${describePolicy(agent.record.approvers)} (kith agent add --approvers); the request is still open`,
      )
      return
    }
    let optionId: unknown
    try {
      optionId = (JSON.parse(decision.content) as { optionId?: unknown }).optionId
    } catch {
      // An unreadable decision answers nothing.
      return
    }
    if (!pending.options.some((o) => o.optionId === optionId)) return
    clearTimeout(pending.timer)
    this.pendingPermissions.delete(requestId)
    pending.resolve({ optionId: optionId as string })
  }

  /**
   * Agent control (kind 4144) `cancel`: from someone who may approve for the agent, it answers
   * the turn's pending permission requests `cancelled` first (or the agent deadlocks), then
   * cancels the turn (session/cancel, then a kill after the grace window).
   */
  private applyControl(control: NostrEvent): void {
    const channel = channelOf(control)
    let action: unknown
    try {
      action = (JSON.parse(control.content) as { action?: unknown }).action
    } catch {
      // Unreadable control events do nothing.
      return
    }
    if (action !== 'cancel' || channel === undefined) return
    const targets = control.tags.filter((t) => t[0] === 'p').map((t) => t[1])
    for (const [pubkey, agent] of this.agents) {
      if (targets.length > 0 && !targets.includes(pubkey)) continue
      if (!this.mayUse(agent, control.pubkey, 'approvers')) continue
      this.cancelPending(pubkey, channel)
      if (agent.host.cancel(channel, this.opts.cancelGraceMs))
        this.log(`cancelling ${agent.record.name}'s turn in #${channel}`)
    }
  }

  /** Answers `cancelled` to the agent's pending permission requests in `channel`. */
  private cancelPending(agent: string, channel: string): void {
    for (const [id, p] of this.pendingPermissions) {
      if (p.agent !== agent || p.channel !== channel) continue
      clearTimeout(p.timer)
      this.pendingPermissions.delete(id)
      p.resolve('cancelled')
    }
  }

  /** Sends a cancel (kind 4144) for the agents working in `channel` (all, or one by name). */
  cancelTurn(params: Record<string, unknown>): { event: NostrEvent } {
    const channel = params.channel
    if (typeof channel !== 'string') throw new KithError('usage', 'cancel needs a channel')
    const tags: string[][] = [['h', channel]]
    if (typeof params.agent === 'string') {
      const pubkey = this.names.resolve(params.agent)
      if (pubkey === undefined) throw new KithError('usage', `no agent named ${params.agent}`)
      tags.push(['p', pubkey])
    }
    const control = signEvent(
      {
        kind: Kind.AgentControl,
        created_at: this.now(),
        tags,
        content: JSON.stringify({ action: 'cancel' }),
      },
      this.id.deviceSecret,
    )
    this.store.enqueue(control, this.now())
    this.applyControl(control)
    for (const link of this.links) this.pump(link)
    return { event: control }
  }

  /** Signs and sends a decision from this device (kith permit, /allow in kith chat). */
  decide(params: Record<string, unknown>): { event: NostrEvent } {
    const requestText = params.request
    const option = params.option
    if (
      typeof requestText !== 'string' ||
      (typeof option !== 'string' && typeof option !== 'number')
    ) {
      throw new KithError('usage', 'decide needs request and option')
    }
    const rows = this.store.events.query([{ kinds: [Kind.PermissionRequest], limit: 200 }], {
      defaultLimit: 200,
      maxLimit: 200,
    })
    const row = rows.find((r) => r.id.startsWith(requestText))
    if (row === undefined)
      throw new KithError('usage', `no permission request ${requestText} is known here`)
    const request = JSON.parse(row.raw) as NostrEvent
    const { options } = JSON.parse(request.content) as { options: PermissionAsk['options'] }
    const chosen =
      typeof option === 'number' || /^\d+$/.test(option)
        ? options[Number(option) - 1]
        : options.find((o) => o.optionId === option)
    if (chosen === undefined) {
      throw new KithError(
        'usage',
        `option ${String(option)} is not one of: ${options.map((o, i) => `${i + 1} ${o.name}`).join(', ')}`,
      )
    }
    const decision = signEvent(
      {
        kind: Kind.PermissionDecision,
        created_at: this.now(),
        tags: [
          ['e', request.id],
          ['h', channelOf(request) ?? 'general'],
          ['p', request.pubkey],
        ],
        content: JSON.stringify({ optionId: chosen.optionId }),
      },
      this.id.deviceSecret,
    )
    this.store.enqueue(decision, this.now())
    this.emit(decision)
    this.applyDecision(decision)
    for (const link of this.links) this.pump(link)
    return { event: decision }
  }

  /** Posts a reply signed by the agent's key, threaded under the question, with its NIP-OA tag. */
  private replyAs(
    agent: { record: AgentRecord; secret: Uint8Array },
    question: NostrEvent,
    text: string,
  ): NostrEvent | undefined {
    if (this.stopped) return undefined
    const root = question.tags.find((t) => t[0] === 'e' && t[3] === 'root')?.[1]
    const tags: string[][] = [['h', channelOf(question) ?? 'general']]
    tags.push(['e', root ?? question.id, '', 'root'])
    if (root !== undefined) tags.push(['e', question.id, '', 'reply'])
    tags.push(['p', question.pubkey])
    if (agent.record.authTag) tags.push(agent.record.authTag)
    const maxContent = 60_000
    const content =
      text.length > maxContent
        ? `${text.slice(0, maxContent)}
… (truncated)`
        : text
    const reply = signEvent(
      { kind: Kind.ChatMessage, created_at: this.now(), tags, content },
      agent.secret,
    )
    this.store.enqueue(reply, this.now())
    this.emit(reply)
    for (const link of this.links) this.pump(link)
    return reply
  }

  private readonly frames = new Map<string, { updates: unknown[]; timer: NodeJS.Timeout }>()
  private readonly watchers = new Set<(frame: WatchFrame) => void>()

  /**
   * Observer frames (kind 24142): a turn's session/update stream, coalesced (every 100 ms or 50
   * updates), NIP-44 encrypted by the agent to each recipient — the prompter, and the devices of
   * the agent's owner (at most 10) — and sent live, never stored. Watchers on this node get them
   * directly.
   */
  private observe(
    agent: { record: AgentRecord; secret: Uint8Array },
    question: NostrEvent,
    update: unknown,
  ): void {
    let buf = this.frames.get(question.id)
    if (buf === undefined) {
      buf = { updates: [], timer: setTimeout(() => this.flushFrame(agent, question), 100) }
      this.frames.set(question.id, buf)
    }
    buf.updates.push(update)
    if (buf.updates.length >= 50) this.flushFrame(agent, question)
  }

  private flushFrame(
    agent: { record: AgentRecord; secret: Uint8Array },
    question: NostrEvent,
  ): void {
    const buf = this.frames.get(question.id)
    if (buf === undefined) return
    clearTimeout(buf.timer)
    this.frames.delete(question.id)
    // A frame timer firing during shutdown has a closed store: frames are best effort.
    if (this.stopped) return
    const channel = channelOf(question) ?? 'general'
    const frame: WatchFrame = {
      agent: this.names.who(agent.record.pubkey),
      channel,
      prompt: question.id,
      updates: buf.updates,
    }
    for (const fn of this.watchers) fn(frame)
    const owner = this.ownerOf(agent.record.pubkey)
    const devices = this.book.verifier
      .allGrants()
      .filter(
        (g) =>
          g.role === 'device' &&
          this.ownerOf(g.subject) === owner &&
          g.subject !== this.id.devicePubkey,
      )
      .map((g) => g.subject)
    // The owner key itself too: a person may watch from any Nostr client holding it.
    const recipients = [
      ...new Set([question.pubkey, ...(owner === undefined ? [] : [owner]), ...devices]),
    ]
      .filter((r) => r !== this.id.devicePubkey)
      .slice(0, 10)
    const content = JSON.stringify({ prompt: question.id, updates: buf.updates })
    for (const r of recipients) {
      const event = signEvent(
        {
          kind: Kind.ObserverFrame,
          created_at: this.now(),
          tags: [
            ['p', r],
            ['h', channel],
            ['e', question.id],
          ],
          content: nip44Encrypt(content, getConversationKey(agent.secret, r)),
        },
        agent.secret,
      )
      for (const link of this.links) {
        // Frames are live and best effort (never stored or queued): a lost one is not resent.
        if (link.authenticated)
          link.publish(event).then(
            (a) => {
              if (!a.ok) this.log(`frame refused by ${link.url}: ${a.message}`)
            },
            () => undefined,
          )
      }
    }
  }

  /** An observer frame addressed to this device: decrypted and shown to local watchers. */
  private receiveFrame(event: NostrEvent): void {
    if (!event.tags.some((t) => t[0] === 'p' && t[1] === this.id.devicePubkey)) return
    let body: { prompt?: unknown; updates?: unknown }
    try {
      body = JSON.parse(
        nip44Decrypt(event.content, getConversationKey(this.id.deviceSecret, event.pubkey)),
      ) as typeof body
    } catch {
      this.log(`dropped an observer frame that does not decrypt`)
      return
    }
    if (!Array.isArray(body.updates) || typeof body.prompt !== 'string') return
    const frame: WatchFrame = {
      agent: this.names.who(event.pubkey),
      channel: channelOf(event) ?? 'general',
      prompt: body.prompt,
      updates: body.updates,
    }
    for (const fn of this.watchers) fn(frame)
  }

  /** A channel notice signed by a hosted agent (new session, …), not threaded under anything. */
  private noticeAs(agentPubkey: string, channel: string, text: string): void {
    const agent = this.agents.get(agentPubkey)
    if (agent === undefined || this.stopped) return
    const tags: string[][] = [['h', channel]]
    if (agent.record.authTag) tags.push(agent.record.authTag)
    const notice = signEvent(
      { kind: Kind.ChatMessage, created_at: this.now(), tags, content: text },
      agent.secret,
    )
    this.store.enqueue(notice, this.now())
    this.emit(notice)
    for (const link of this.links) this.pump(link)
  }

  /** The device's kind-0 profile, re-published only when its name changed. */
  private publishProfile(): void {
    const { id } = this
    const content = JSON.stringify({ name: id.config.name, kith: { role: 'device' } })
    const current = this.store.events.query(
      [{ kinds: [Kind.Profile], authors: [id.devicePubkey], limit: 1 }],
      {
        defaultLimit: 1,
        maxLimit: 1,
      },
    )[0]
    if (current !== undefined && (JSON.parse(current.raw) as NostrEvent).content === content) return
    const profile = signEvent(
      { kind: Kind.Profile, created_at: this.now(), tags: [], content },
      id.deviceSecret,
    )
    this.store.enqueue(profile, this.now())
  }

  private sendPresence(link: HubLink): void {
    const event = signEvent(
      { kind: Kind.Presence, created_at: this.now(), tags: [['status', 'online']], content: '' },
      this.id.deviceSecret,
    )
    link.publish(event).catch((err: unknown) => this.log(`presence to ${link.url}: ${String(err)}`))
  }

  /**
   * Sends every outbox event this hub has not answered, oldest first, one at a time. OK true and
   * OK false are both recorded (a refusal is shown, never dropped); a lost connection leaves the
   * rest for the next time the link is up.
   */
  private pump(link: HubLink): void {
    if (this.pumping.has(link.url) || !link.authenticated) return
    this.pumping.add(link.url)
    const run = async () => {
      for (;;) {
        const pending = this.store.pendingFor(link.url)
        if (pending.length === 0 || !link.authenticated) return
        for (const event of pending) {
          const answer = await link.publish(event)
          this.store.recordDelivery(event.id, link.url, answer.ok, answer.message, this.now())
          const t = answer.ok ? this.pendingReplyTiming.get(event.id) : undefined
          if (t !== undefined) {
            this.pendingReplyTiming.delete(event.id)
            this.turnMetrics.push({
              inMs: t.promptSentAt - t.receivedAt,
              outMs: performance.now() - t.stopAt,
              turnMs: t.stopAt - t.promptSentAt,
            })
            if (this.turnMetrics.length > 1000) this.turnMetrics.shift()
          }
          if (!answer.ok)
            this.log(`${link.url} refused ${event.id.slice(0, 12)}…: ${answer.message}`)
          this.emitDelivery(event, link.url, answer.ok, answer.message)
        }
      }
    }
    run()
      .catch((err: unknown) =>
        this.log(`outbox to ${link.url}: ${err instanceof Error ? err.message : String(err)}`),
      )
      .finally(() => {
        this.pumping.delete(link.url)
        // An event queued while the last pass was finishing must not wait for the next trigger.
        if (!this.stopped && link.authenticated && this.store.pendingFor(link.url).length > 0) {
          setTimeout(() => this.pump(link), 1000).unref()
        }
      })
  }

  private readonly deliveryWaiters = new Map<
    string,
    ((d: { hub: string; ok: boolean; message: string }) => void)[]
  >()

  private emitDelivery(event: NostrEvent, hub: string, ok: boolean, message: string): void {
    for (const fn of this.deliveryWaiters.get(event.id) ?? []) fn({ hub, ok, message })
  }

  /**
   * Events from hubs: drop what is already stored, verify signatures off the main thread,
   * take grants and revocations first, then accept only what the grant chains allow now, and
   * store it. Refused and forged events are counted in the log, never stored or shown.
   */
  async intake(events: NostrEvent[]): Promise<void> {
    if (events.length === 0 || this.stopped) return
    const known = this.store.events.knownIds(events.map((e) => e.id))
    const seen = new Set<string>()
    const fresh = events.filter((e) => {
      if (seen.has(e.id)) return false
      // A grant or revocation may be in node.db (written by a CLI command such as kith pair)
      // yet unknown to this process's verifier, so those are always offered to it.
      const isGrant = e.kind === Kind.Grant || e.kind === Kind.Revocation
      if (known.has(e.id) && !isGrant) return false
      seen.add(e.id)
      return true
    })
    if (fresh.length === 0) return
    const results = await Promise.all(fresh.map((e) => this.pool.verify(e)))
    const valid = fresh.filter((_, i) => results[i] === 'ok')
    if (valid.length < fresh.length)
      this.log(`dropped ${fresh.length - valid.length} events with bad ids or signatures`)
    const grantEvents = valid
      .filter((e) => e.kind === Kind.Grant || e.kind === Kind.Revocation)
      .sort((a, b) => a.created_at - b.created_at)
    if (grantEvents.length > 0) {
      this.book.learn(grantEvents, { verified: true })
      this.enforceMembership()
    }
    const now = this.now()
    // Definitions next (checked as a hub checks them), so the events below meet the right rules.
    const definitions = valid
      .filter((e) => e.kind === Kind.ChannelDefinition)
      .sort((a, b) => a.created_at - b.created_at)
    const refusedDefinitions = new Set<string>()
    for (const e of definitions) {
      const r = this.channels.add(e, { now })
      if (r.status === 'rejected') {
        refusedDefinitions.add(e.id)
        this.log(`ignored a definition of a channel (${r.code}: ${r.reason})`)
      }
    }
    const accepted: NostrEvent[] = []
    for (const e of valid) {
      if (e.kind === Kind.Grant || e.kind === Kind.Revocation) continue
      if (refusedDefinitions.has(e.id)) continue
      if (e.kind !== Kind.ChannelDefinition && !this.channels.mayPost(e, now).ok) continue
      const d = this.book.verifier.authorize(e.pubkey, { now, kind: e.kind, channel: channelOf(e) })
      if (!d.ok) continue
      if (isEphemeralKind(e.kind)) {
        if (e.kind === Kind.Presence) {
          this.presence.set(e.pubkey, { status: 'online', at: e.created_at })
        }
        if (e.kind === Kind.ObserverFrame) this.receiveFrame(e)
        continue
      }
      accepted.push(e)
    }
    if (accepted.length === 0) return
    const outcomes = this.store.events.insertBatch(accepted)
    accepted.forEach((e, i) => {
      if (outcomes[i] !== 'stored') return
      if (
        e.kind === Kind.ChatMessage ||
        e.kind === Kind.PermissionRequest ||
        e.kind === Kind.PermissionDecision
      ) {
        this.emit(e)
      }
      if (e.kind === Kind.ChatMessage) this.dispatch(e)
      if (e.kind === Kind.PermissionDecision) this.applyDecision(e)
      if (e.kind === Kind.AgentControl) this.applyControl(e)
    })
  }

  private emit(event: NostrEvent): void {
    if (this.listeners.size === 0) return
    const item: ChatItem = { event, from: this.names.who(event.pubkey), channel: channelOf(event) }
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
    const posting = this.channels.mayPost(
      { kind: Kind.ChatMessage, tags: [['h', channel]], pubkey: this.id.devicePubkey },
      this.now(),
    )
    if (!posting.ok)
      throw new KithError(
        'restricted',
        `#${channel} is private and you are not a member: ask its creator or an admin (kith channel members '#${channel}')`,
      )
    const event = buildChat(this.id, this.names, this.store, {
      channel,
      text,
      ...(typeof params.reply === 'string' ? { reply: params.reply } : {}),
    })
    const first = new Promise<{ hub: string; ok: boolean; message: string }>((resolve) => {
      this.deliveryWaiters.set(event.id, [resolve])
    })
    this.store.enqueue(event, this.now())
    this.emit(event)
    this.dispatch(event)
    for (const link of this.links) this.pump(link)
    // With no hub connected there is nobody to wait for: it is queued, and says so at once.
    if (!this.links.some((l) => l.authenticated)) {
      this.deliveryWaiters.delete(event.id)
      return { event, deliveries: [] }
    }
    const timeoutMs = typeof params.waitMs === 'number' ? params.waitMs : 5000
    const timer = new Promise<undefined>((r) => setTimeout(() => r(undefined), timeoutMs).unref())
    const d = await Promise.race([first, timer])
    this.deliveryWaiters.delete(event.id)
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

  status(): {
    device: string
    name: string
    fleet: string
    embeddedHub: string | null
    hubs: LinkStatus[]
    outbox: number
    agents: unknown[]
    refused: unknown[]
  } {
    return {
      device: this.id.devicePubkey,
      name: this.id.config.name,
      fleet: this.fleet,
      embeddedHub: this.embedded?.url ?? null,
      hubs: this.links.map((l) => ({
        url: l.url,
        state: l.state,
        lagMs: l.rttMs ?? null,
        cursor: this.store.cursor(l.url) ?? null,
        outbox: this.store.pendingFor(l.url).length,
        lastError: l.lastError ?? null,
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
      refused: this.store
        .refusals()
        .map((r) => ({ event: r.eventId, hub: r.hub, message: r.message })),
    }
  }

  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    clearInterval(this.presenceTimer)
    for (const p of this.pendingPermissions.values()) {
      clearTimeout(p.timer)
      p.resolve('cancelled')
    }
    this.pendingPermissions.clear()
    await Promise.all([...this.agents.values()].map((a) => a.host.stop()))
    for (const a of this.agents.values()) a.secret.fill(0)
    for (const link of this.links) link.stop()
    await new Promise<void>((resolve) =>
      this.control ? this.control.close(() => resolve()) : resolve(),
    )
    await this.embedded?.close()
    await this.pool?.close()
    this.store.close()
  }
}

/** A signed chat message from this device, with @mentions resolved to p tags. */
export function buildChat(
  id: Identity,
  names: Names,
  store: NodeStore,
  spec: { channel: string; text: string; reply?: string },
): NostrEvent {
  const mentions = mentionedNames(spec.text)
    .map((n) => names.resolve(n))
    .filter((p): p is string => p !== undefined)
  let replyTo: { id: string; root?: string } | undefined
  if (spec.reply !== undefined) {
    const parent = store.events.query([{ ids: [spec.reply] }], { defaultLimit: 1, maxLimit: 1 })[0]
    if (parent === undefined) throw new KithError('usage', `no message ${spec.reply} is known here`)
    const root = (JSON.parse(parent.raw) as NostrEvent).tags.find(
      (t) => t[0] === 'e' && t[3] === 'root',
    )?.[1]
    replyTo = { id: spec.reply, ...(root === undefined ? {} : { root }) }
  }
  const sign = (createdAt: number) =>
    signEvent(
      makeChatMessage(
        {
          channel: spec.channel,
          text: spec.text,
          mentions,
          ...(replyTo === undefined ? {} : { replyTo }),
        },
        createdAt,
      ),
      id.deviceSecret,
    )
  // The same text sent twice within a second would be the same event (NIP-01 ids hash
  // created_at in seconds), and the second prompt would vanish as a duplicate: move it on a second.
  let createdAt = Math.floor(Date.now() / 1000)
  let event = sign(createdAt)
  while (store.events.knownIds([event.id]).size > 0) event = sign(++createdAt)
  return event
}

/** Chat messages from node.db, oldest first (the newest `limit` of them). */
export function chatHistory(
  store: NodeStore,
  names: Names,
  params: Record<string, unknown>,
): ChatItem[] {
  const filter: Record<string, unknown> = {
    kinds: [Kind.ChatMessage, Kind.PermissionRequest, Kind.PermissionDecision],
  }
  if (typeof params.channel === 'string') filter.tags = { h: [params.channel] }
  if (typeof params.since === 'number') filter.since = params.since
  const limit = typeof params.limit === 'number' ? params.limit : 50
  const rows = store.events.query([{ ...filter, limit }], {
    defaultLimit: limit,
    maxLimit: 100_000,
  })
  return rows.reverse().map((r) => {
    const event = JSON.parse(r.raw) as NostrEvent
    return { event, from: names.who(event.pubkey), channel: channelOf(event) }
  })
}
