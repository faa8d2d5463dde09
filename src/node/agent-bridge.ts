import { KithError } from '../errors.js'
import {
  boundPrompts,
  checkFresh,
  noticeTag,
  requireFleet,
  type Check,
} from '../events/agent-binding.js'
import { channelOf, isInterrupt } from '../events/chat.js'
import { signEvent, type NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import type { PromptJob } from '../acp/host.js'
import { personOf } from '../grants/members.js'
import { authTagFor } from '../grants/nip-oa.js'
import { describePolicy, policyAllows } from '../grants/policy.js'
import { authTagsOf, listAgentRecords, type AgentRecord } from '../identity/agents.js'
import { hostAgent } from './agent-loader.js'
import { PermissionRequests } from './agent-permissions.js'
import type { HostedAgent, NodeContext } from './node-context.js'
import { ObserverFrames } from './observer-frames.js'
import { openPrompts } from './open-prompts.js'
import { TurnMetrics } from './turn-metrics.js'

/** How an agent reply is tagged: a `notice` leaves its prompt unanswered (kith-agents/1). */
export interface ReplyOptions {
  notice?: boolean
}

/** The message text without its @mentions of `name` (plain or person-qualified). */
export function withoutMention(content: string, name: string): string {
  return content.replace(new RegExp(`@(?:[\\w-]+/)?${name}(?![\\w-])`, 'gi'), '').trim()
}

export interface AgentBridgeOptions {
  /** How long a permission request waits for a person before it is answered cancelled. */
  permissionTimeoutMs?: number
  /** After a cancel, how long an agent may take to end its turn before it is killed. */
  cancelGraceMs?: number
  /** Agent watchdog: a silent turn ends after this long (default 15 min)… */
  agentIdleTimeoutMs?: number
  /** …and no turn runs longer than this (default 2 h). */
  agentTurnCapMs?: number
}

/**
 * The agents this node hosts, bridged to the fleet: @mentions become prompts, tool calls become
 * permission requests (4142/4143), cancels (4144) end turns, and turns are watched (24142).
 */
export class AgentBridge {
  /** Agents this node hosts, by pubkey. Their secret keys stay in this process. */
  readonly agents = new Map<string, HostedAgent>()
  readonly metrics = new TurnMetrics()
  readonly permissions: PermissionRequests
  readonly frames: ObserverFrames
  /** Set once the node is stopping: turns it ends are answered after the restart instead. */
  private stopping = false

  constructor(
    private readonly node: NodeContext,
    private readonly opts: AgentBridgeOptions,
  ) {
    this.permissions = new PermissionRequests(node, opts.permissionTimeoutMs, {
      agent: (pubkey) => this.agents.get(pubkey),
      mayUse: (agent, key, which) => this.mayUse(agent, key, which),
      replyAs: (agent, question, text, o) => this.replyAs(agent, question, text, o),
    })
    this.frames = new ObserverFrames(
      node,
      (pubkey) => this.personOf(pubkey),
      () => this.hostPerson,
    )
  }

  /**
   * The person every agent hosted here belongs to, for its policies and observers: this node's
   * own owner (its config and identity), never whatever grants of the agent's key a hub shows.
   * undefined (a node that knows no owner): nobody but that owner could be allowed, so nobody is.
   */
  private get hostPerson(): string | undefined {
    return this.node.id.ownerPubkey
  }

  /** Agents with a command are spawned on first use; the key only ever lives in this process. */
  loadAgents(): void {
    for (const record of listAgentRecords(this.node.id.home)) {
      if (record.command === undefined || this.agents.has(record.pubkey)) continue
      if (!this.node.book.verifier.isMember(record.pubkey, this.node.now()).ok) {
        this.node.log(`agent ${record.name}: its key is not (or no longer) granted; not started`)
        continue
      }
      const command = record.command
      const agent = hostAgent(this.node, { ...record, command }, this.opts, (channel, reason) =>
        this.noticeAs(
          record.pubkey,
          channel,
          `ℹ ${record.name} started a new session in #${channel}: ${reason}`,
        ),
      )
      if (agent === undefined) continue
      this.agents.set(record.pubkey, agent)
      this.node.log(`hosting agent ${record.name} (${record.command.join(' ')})`)
    }
  }

  /**
   * Takes each hosted agent's record from disk again (policies, permissions mode), and hosts
   * agents added since the node started (kith agent add while kith up runs).
   */
  reloadSettings(): void {
    for (const record of listAgentRecords(this.node.id.home)) {
      const agent = this.agents.get(record.pubkey)
      if (agent === undefined) continue
      agent.record = record
      agent.host.setPermissions(record.permissions ?? 'ask')
      this.node.log(`agent ${record.name}: settings updated`)
    }
    this.loadAgents()
  }

  /** The person (owner key) a key belongs to: the nearest owner of its chain, or the founder. */
  private personOf(pubkey: string): string | undefined {
    return personOf(this.node.book.verifier, pubkey, this.node.now())
  }

  /** Whether `key` may act on `agent` under one of its policies (prompt or approve). */
  private mayUse(
    agent: { record: AgentRecord },
    key: string,
    which: 'allow' | 'approvers',
  ): boolean {
    return policyAllows(agent.record[which], { key, person: this.personOf(key) }, this.hostPerson)
  }

  /**
   * After grants change: a key that is no longer a member loses its queued prompts (each dropped
   * with a visible notice) and its running turns (cancelled), on every agent hosted here.
   */
  enforceMembership(): void {
    const isMember = (key: string) => this.node.book.verifier.isMember(key, this.node.now()).ok
    const gone = (job: PromptJob) => job.from !== undefined && !isMember(job.from)
    // A hosted agent whose own key was revoked (or expired) can post nothing: stop hosting it.
    for (const [pubkey, agent] of this.agents) {
      if (isMember(pubkey)) continue
      this.agents.delete(pubkey)
      this.node.store.prompts.forgetAgent(pubkey)
      this.permissions.cancelPending(pubkey)
      this.node.log(`agent ${agent.record.name}: its key was revoked; no longer hosted`)
      void agent.host.stop().finally(() => agent.secret.fill(0))
    }
    for (const agent of this.agents.values()) {
      for (const job of agent.host.dropQueued(gone)) {
        job.done({ ok: false, message: 'dropped: its author is no longer a member of this fleet' })
      }
      for (const job of agent.host.runningJobs()) {
        if (!gone(job)) continue
        this.node.log(
          `cancelling ${agent.record.name}'s turn in #${job.channel}: its author was removed`,
        )
        this.permissions.cancelPending(agent.record.pubkey, job.channel)
        agent.host.cancel(job.channel, this.opts.cancelGraceMs)
      }
    }
  }

  /**
   * A chat message that mentions (p tag) an agent hosted here becomes a prompt, if the agent's
   * policy allows its author; otherwise a one-line refusal is posted. Never silence.
   */
  dispatch(event: NostrEvent): void {
    if (event.kind !== Kind.ChatMessage) return
    const channel = channelOf(event)
    if (channel === undefined) return
    for (const tag of event.tags) {
      if (tag[0] !== 'p' || tag[1] === undefined) continue
      const agent = this.agents.get(tag[1])
      if (agent === undefined || event.pubkey === tag[1] || this.agents.has(event.pubkey)) continue
      this.prompt(agent, event, channel, false)
    }
  }

  /**
   * After a restart: prompts taken before it and never answered (the journal in node.db). A
   * queued one runs now; one whose turn was running gets a visible notice instead (its tools
   * may have half run, so it is not run again unasked).
   */
  resumeJournal(): void {
    const journal = this.node.store.prompts
    for (const row of journal.all()) {
      const agent = this.agents.get(row.agent)
      const raw = this.node.store.events.query([{ ids: [row.eventId] }], {
        defaultLimit: 1,
        maxLimit: 1,
      })[0]
      const event = raw === undefined ? undefined : (JSON.parse(raw.raw) as NostrEvent)
      const channel = event === undefined ? undefined : channelOf(event)
      if (agent === undefined || event === undefined || channel === undefined) {
        journal.done(row.eventId, row.agent)
        continue
      }
      if (row.state === 'running') {
        journal.done(row.eventId, row.agent)
        this.replyAs(
          agent,
          event,
          `⚠ ${agent.record.name} did not answer: this node stopped during the turn; ask again if it is still needed`,
        )
        continue
      }
      this.node.log(`agent ${agent.record.name}: running a prompt queued before the restart`)
      this.prompt(agent, event, channel, true)
    }
  }

  private prompt(agent: HostedAgent, event: NostrEvent, channel: string, resumed: boolean): void {
    if (!this.mayUse(agent, event.pubkey, 'allow')) {
      this.node.store.prompts.done(event.id, agent.record.pubkey)
      this.replyAs(
        agent,
        event,
        `⚠ ${agent.record.name} does not take your prompts: its policy allows ${describePolicy(agent.record.allow)} (kith agent add --allow)`,
      )
      return
    }
    const text = withoutMention(event.content, agent.record.name)
    const receivedAt = performance.now()
    const timing: { promptSentAt?: number; stopAt?: number } = {}
    const journal = this.node.store.prompts
    journal.add(event.id, agent.record.pubkey, this.node.now())
    const job: PromptJob = {
      channel,
      text,
      from: event.pubkey,
      prompt: event.id,
      timing,
      started: () => journal.running(event.id, agent.record.pubkey),
      permission: (ask) => this.permissions.ask(agent, event, ask),
      update: (u) => this.frames.observe(agent, event, u),
      done: (outcome) => {
        // A turn ended by this node stopping is answered after its restart (resumeJournal).
        if (this.stopping && !outcome.ok) return
        journal.done(event.id, agent.record.pubkey)
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
          this.metrics.expectReply(reply.id, {
            receivedAt,
            promptSentAt: timing.promptSentAt,
            stopAt: timing.stopAt,
          })
        }
      },
    }
    if (resumed || !isInterrupt(event)) {
      agent.host.enqueue(job)
      return
    }
    // Interrupting is cancelling someone's turn: it takes the approvers policy as well.
    if (!this.mayUse(agent, event.pubkey, 'approvers')) {
      this.replyAs(
        agent,
        event,
        `⚠ you may not interrupt ${agent.record.name}: its approvers are ${describePolicy(agent.record.approvers)}; your prompt is queued`,
        { notice: true },
      )
      agent.host.enqueue(job)
      return
    }
    // ...and it is bound, as a cancel is, to this fleet, to now and to the turns it names.
    const bound = this.bound(event)
    if (!bound.ok) {
      this.node.log(`not interrupting ${agent.record.name} in #${channel}: ${bound.reason}`)
      this.replyAs(
        agent,
        event,
        `⚠ ${agent.record.name} was not interrupted: ${bound.reason}; your prompt is queued`,
        { notice: true },
      )
      agent.host.enqueue(job)
      return
    }
    const named = boundPrompts(event)
    const running = agent.host.runningIn(channel)
    const stops = running?.prompt !== undefined && named.has(running.prompt)
    if (stops) this.permissions.cancelPending(agent.record.pubkey, channel)
    if (agent.host.interrupt(job, () => stops, this.opts.cancelGraceMs))
      this.node.log(`interrupting ${agent.record.name}'s turn in #${channel}`)
    else if (running !== undefined)
      this.replyAs(
        agent,
        event,
        `ℹ ${agent.record.name} is running a turn your interrupt does not name (a prompt it had not seen): that turn goes on, and yours runs next`,
        { notice: true },
      )
  }

  /** A cancel's or an interrupt's binding (kith-agents/1): its fleet, then its date. */
  private bound(event: NostrEvent): Check {
    const fleet = requireFleet(event, this.node.book.fleet)
    return fleet.ok ? checkFresh(event, this.node.now()) : fleet
  }

  /**
   * Agent control (kind 4144) `cancel`: from someone who may approve for the agent, it answers
   * the turn's pending permission requests `cancelled` first (or the agent deadlocks), then
   * cancels the turn (session/cancel, then a kill after the grace window).
   */
  applyControl(control: NostrEvent): void {
    const channel = channelOf(control)
    let action: unknown
    try {
      action = (JSON.parse(control.content) as { action?: unknown }).action
    } catch {
      // Unreadable control events do nothing (they are stored; there is nobody to tell).
      this.node.log(`ignored an agent control event that is not JSON (${control.id.slice(0, 8)})`)
      return
    }
    if (action !== 'cancel' || channel === undefined) return
    const targets = control.tags.filter((t) => t[0] === 'p').map((t) => t[1])
    const named = boundPrompts(control)
    for (const [pubkey, agent] of this.agents) {
      if (targets.length > 0 && !targets.includes(pubkey)) continue
      if (!this.mayUse(agent, control.pubkey, 'approvers')) continue
      const running = agent.host.runningIn(channel)
      // Only the turn it names: a cancel made for an earlier turn never stops a later one.
      const bound = this.bound(control)
      const refusal = !bound.ok
        ? bound.reason
        : named.size === 0
          ? 'it names no turn (made by an older client?)'
          : undefined
      if (refusal !== undefined) {
        this.node.log(`ignored a cancel for ${agent.record.name} in #${channel}: ${refusal}`)
        // Told in the channel only where a turn runs that its sender may think stopped.
        if (running !== undefined)
          this.noticeAs(
            pubkey,
            channel,
            `⚠ ${agent.record.name} ignored a cancel from ${this.node.names.who(control.pubkey).name}: ${refusal}`,
          )
        continue
      }
      if (running?.prompt === undefined || !named.has(running.prompt)) {
        this.node.log(
          `a cancel for ${agent.record.name} in #${channel} names no turn running now; nothing stopped`,
        )
        continue
      }
      this.permissions.cancelPending(pubkey, channel)
      if (agent.host.cancel(channel, this.opts.cancelGraceMs))
        this.node.log(`cancelling ${agent.record.name}'s turn in #${channel}`)
    }
  }

  /**
   * Sends a cancel (kind 4144) for the agents working in `channel` (all, or one by name). It
   * names the prompts still open there as this node knows them, and the fleet: the hosting node
   * stops a turn only if it is one of those.
   */
  cancelTurn(params: Record<string, unknown>): { event: NostrEvent; prompts: number } {
    const channel = params.channel
    if (typeof channel !== 'string') throw new KithError('usage', 'cancel needs a channel')
    const names = this.node.names
    const isAgent = (pubkey: string) => names.who(pubkey).role === 'agent'
    const tags: string[][] = [
      ['h', channel],
      ['fleet', this.node.book.fleet],
    ]
    let agents: Set<string> | undefined
    if (typeof params.agent === 'string') {
      const pubkey = names.resolve(params.agent, this.node.id.devicePubkey)
      if (pubkey === undefined || !isAgent(pubkey))
        throw new KithError('not-found', `no agent named ${params.agent} in this fleet`)
      tags.push(['p', pubkey])
      agents = new Set([pubkey])
    }
    const prompts = openPrompts(this.node.store.events, channel, isAgent, agents)
    if (prompts.length === 0)
      throw new KithError(
        'not-found',
        `nothing to cancel in #${channel}: no prompt to ${typeof params.agent === 'string' ? `@${params.agent}` : 'an agent'} there is waiting for an answer (as this node knows)`,
      )
    for (const id of prompts) tags.push(['e', id])
    const control = signEvent(
      {
        kind: Kind.AgentControl,
        created_at: this.node.now(),
        tags,
        content: JSON.stringify({ action: 'cancel' }),
      },
      this.node.id.deviceSecret,
    )
    this.node.enqueue(control)
    this.applyControl(control)
    this.node.pump()
    return { event: control, prompts: prompts.length }
  }

  /** Posts a reply signed by the agent's key, threaded under the question, with its NIP-OA tag. */
  replyAs(
    agent: { record: AgentRecord; secret: Uint8Array },
    question: NostrEvent,
    text: string,
    opts: ReplyOptions = {},
  ): NostrEvent | undefined {
    if (this.node.stopped()) return undefined
    const root = question.tags.find((t) => t[0] === 'e' && t[3] === 'root')?.[1]
    const tags: string[][] = [
      ['h', channelOf(question) ?? 'general'],
      ['fleet', this.node.book.fleet],
    ]
    tags.push(['e', root ?? question.id, '', 'root'])
    if (root !== undefined) tags.push(['e', question.id, '', 'reply'])
    tags.push(['p', question.pubkey])
    if (opts.notice) tags.push([...noticeTag])
    const createdAt = this.node.now()
    const auth = authTagFor(authTagsOf(agent.record), {
      kind: Kind.ChatMessage,
      created_at: createdAt,
    })
    if (auth) tags.push(auth)
    const maxContent = 60_000
    const content =
      text.length > maxContent
        ? `${text.slice(0, maxContent)}
… (truncated)`
        : text
    const reply = signEvent(
      { kind: Kind.ChatMessage, created_at: createdAt, tags, content },
      agent.secret,
    )
    this.node.enqueue(reply)
    this.node.emit(reply)
    this.node.pump()
    return reply
  }

  /** A channel notice signed by a hosted agent (new session, …), not threaded under anything. */
  private noticeAs(agentPubkey: string, channel: string, text: string): void {
    const agent = this.agents.get(agentPubkey)
    if (agent === undefined || this.node.stopped()) return
    const tags: string[][] = [
      ['h', channel],
      ['fleet', this.node.book.fleet],
    ]
    const createdAt = this.node.now()
    const auth = authTagFor(authTagsOf(agent.record), {
      kind: Kind.ChatMessage,
      created_at: createdAt,
    })
    if (auth) tags.push(auth)
    const notice = signEvent(
      { kind: Kind.ChatMessage, created_at: createdAt, tags, content: text },
      agent.secret,
    )
    this.node.enqueue(notice)
    this.node.emit(notice)
    this.node.pump()
  }

  /** Answers every open permission request, stops the agents and wipes their keys. */
  async stop(): Promise<void> {
    this.stopping = true
    this.permissions.cancelAll()
    await Promise.all([...this.agents.values()].map((a) => a.host.stop()))
    for (const a of this.agents.values()) a.secret.fill(0)
  }
}
