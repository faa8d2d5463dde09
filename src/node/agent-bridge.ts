import { KithError } from '../errors.js'
import { boundPrompts, checkFresh, requireFleet, type Check } from '../events/agent-binding.js'
import { makeAgentCancel, parseAgentControl, type AgentControl } from '../events/agent-control.js'
import { channelOf, isInterrupt, makeNotice, makeReply } from '../events/chat.js'
import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { WorkLog, workMaxBytes, workTags } from '../events/turn-work.js'
import type { PromptJob, TurnOutcome } from '../acp/host.js'
import { describePlace } from '../acp/session-key.js'
import { personOf } from '../grants/members.js'
import { authTagFor } from '../grants/nip-oa.js'
import { mayActOnAgent, type Action } from '../grants/authority.js'
import { describePolicy } from '../grants/policy.js'
import { threadFor } from './session-threads.js'
import { authTagsOf, listAgentRecords, type AgentRecord } from '../identity/agents.js'
import { hostAgent } from './agent-loader.js'
import type { AgentBridgeOptions, ReplyOptions } from './agent-options.js'
import { PermissionRequests } from './agent-permissions.js'
import { AgentPolicies } from './agent-policies.js'
import { nodeSigner, postAsAgent, signAsAgent } from './agent-signer.js'
import type { AgentKey, HostedAgent, NodeContext } from './node-context.js'
import { resolveAgent } from '../grants/names.js'
import { ObserverFrames } from './observer-frames.js'
import { openPrompts } from './open-prompts.js'
import {
  applySessionControl,
  requestSession,
  sessionAnswer,
  sessionNotice,
  type SessionControlDeps,
} from './session-control.js'
import { SessionReports } from './sessions.js'
import { routePrompt, type Route } from './session-route.js'
import { settingCommand } from './session-commands.js'
import { TurnMetrics } from './turn-metrics.js'

export type { AgentBridgeOptions, ReplyOptions } from './agent-options.js'

/**
 * The reply that ends a turn: the agent's answer, or a one-line failure; what it had streamed
 * before a cancel or a failure is kept above that line.
 */
export function replyText(name: string, outcome: TurnOutcome): string {
  if (outcome.ok) return outcome.text
  if (outcome.reason === 'rejected')
    return `${outcome.partial === undefined ? '' : `${outcome.partial.replace(/\s+$/, '')}\n\n`}✋ ${name} ${outcome.message}`
  const cancelled = outcome.reason === 'cancelled'
  if (outcome.partial === undefined)
    return cancelled
      ? `⏹ ${name}: ${outcome.message}`
      : `⚠ ${name} did not answer: ${outcome.message}`
  const line = cancelled
    ? `⏹ ${name}: ${outcome.message} (what it said before is above)`
    : `⚠ ${name} did not finish: ${outcome.message}`
  return `${outcome.partial.replace(/\s+$/, '')}\n\n${line}`
}

/**
 * A turn that ended without an answer after a person rejected one of its tool calls: the agent
 * stopped because it was told to, which is neither a failure nor silence. Reported as rejected
 * (outcome cancelled, code rejected), so nobody is told it "did not answer" or sent an error.
 */
export function rejectedTurn(outcome: TurnOutcome, rejected: string | undefined): TurnOutcome {
  if (outcome.ok || rejected === undefined) return outcome
  if (outcome.reason !== 'no-reply' && outcome.reason !== 'error') return outcome
  return {
    ok: false,
    reason: 'rejected',
    message: `stopped: "${rejected}" was rejected`,
    ...(outcome.partial === undefined ? {} : { partial: outcome.partial }),
  }
}

/** The message text without its @mentions of `name` (plain or person-qualified). */
export function withoutMention(content: string, name: string): string {
  return content.replace(new RegExp(`@(?:[\\w-]+/)?${name}(?![\\w-])`, 'gi'), '').trim()
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
  /** The hosted agents' policies as published (kind 34151): the cards name the one in force. */
  readonly policies: AgentPolicies
  readonly frames: ObserverFrames
  /** The hosted agents' sessions, reported to the fleet (kind 34150). */
  readonly sessions: SessionReports
  /** Agents (pubkeys) already said to be not started because their key is not granted. */
  private readonly notStarted = new Set<string>()
  /** Set once the node is stopping: turns it ends are answered after the restart instead. */
  private stopping = false

  constructor(
    private readonly node: NodeContext,
    private readonly opts: AgentBridgeOptions,
  ) {
    this.policies = new AgentPolicies(node)
    this.permissions = new PermissionRequests(node, opts.permissionTimeoutMs, {
      policy: (agent) => this.policies.current(agent),
      agent: (pubkey) => this.agents.get(pubkey),
      mayAct: (agent, key, action) => this.mayAct(agent, key, action),
      replyAs: (agent, question, text, o) => this.replyAs(agent, question, text, o),
    })
    this.sessions = new SessionReports(node)
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
    const ungranted: string[] = []
    for (const record of listAgentRecords(this.node.id.home)) {
      if (record.command === undefined || this.agents.has(record.pubkey)) continue
      if (!this.node.book.verifier.isMember(record.pubkey, this.node.now()).ok) {
        if (!this.notStarted.has(record.pubkey)) ungranted.push(record.name)
        this.notStarted.add(record.pubkey)
        continue
      }
      const command = record.command
      const agent = hostAgent(
        this.node,
        { ...record, command },
        this.opts,
        (place, reason) =>
          this.noticeAs(
            record.pubkey,
            place.channel,
            `ℹ ${record.name} started a new session in ${describePlace(place)}: ${reason}`,
          ),
        {
          onSessionOpened: (place, id, report) =>
            this.sessions.opened(record.pubkey, place, id, report),
          onSessionInfo: (place, update) => this.sessions.info(record.pubkey, place, update),
        },
      )
      if (agent === undefined) continue
      this.agents.set(record.pubkey, agent)
      this.policies.publish(record)
      this.node.log(`hosting agent ${record.name} (${record.command.join(' ')})`)
      this.node.agentStatesChanged()
    }
    // Said once, in one line: a node with many revoked agents does not list them at every start.
    if (ungranted.length > 0)
      this.node.log(
        `not hosting ${ungranted.join(', ')}: no longer granted (revoked or expired); kith agent rm NAME forgets one`,
      )
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
      agent.host.setPermissions(record.permissions ?? 'ask', record.quorum)
      this.policies.publish(record)
      this.node.log(`agent ${record.name}: settings updated`)
    }
    this.loadAgents()
  }

  /** The person (owner key) a key belongs to: the nearest owner of its chain, or the founder. */
  private personOf(pubkey: string): string | undefined {
    return personOf(this.node.book.verifier, pubkey, this.node.now())
  }

  /** Whether `key` may take `action` on `agent` now: the authority table (grants/authority.ts). */
  private mayAct(agent: { record: AgentRecord }, key: string, action: Action): boolean {
    const r = agent.record
    const standing = {
      key: r.pubkey,
      owner: this.hostPerson,
      allow: r.allow,
      approvers: r.approvers,
    }
    return mayActOnAgent(this.node.book.verifier, key, this.node.now(), standing, action)
  }

  /**
   * After grants change: a key that is no longer a member loses its queued prompts (each dropped
   * with a visible notice) and its running turns (cancelled), on every agent hosted here; a hosted
   * agent whose own key was revoked (or expired) is retired.
   */
  enforceMembership(): void {
    const isMember = (key: string) => this.node.book.verifier.isMember(key, this.node.now()).ok
    const gone = (job: PromptJob) => job.from !== undefined && !isMember(job.from)
    // A hosted agent whose own key was revoked (or expired) can post nothing: stop hosting it.
    for (const agent of [...this.agents.values()]) {
      if (isMember(agent.record.pubkey)) continue
      this.retire(agent, 'its key was revoked', true)
    }
    for (const agent of this.agents.values()) {
      for (const job of agent.host.dropQueued(gone)) {
        job.done({
          ok: false,
          reason: 'dropped',
          message: 'dropped: its author is no longer a member of this fleet',
        })
      }
      for (const job of agent.host.runningJobs()) {
        if (!gone(job)) continue
        this.node.log(
          `cancelling ${agent.record.name}'s turn in ${describePlace(job)}: its author was removed`,
        )
        this.permissions.cancelPending(agent.record.pubkey, job.channel, job.prompt)
        agent.host.cancel(job, this.opts.cancelGraceMs)
      }
    }
  }

  /**
   * This node was removed from the fleet (every hub refuses its device): nothing its agents say
   * can reach anyone, so they are all stopped (their processes included) and their keys wiped.
   */
  retireAll(reason: string): void {
    for (const agent of [...this.agents.values()]) this.retire(agent, reason, false)
  }

  /**
   * Stops hosting `agent`, in an order that cannot sign with a wiped key: it is marked retired
   * (so nothing more is signed for it: a turn ending after this is dropped, with a log line),
   * its permission requests are answered cancelled, every prompt it had taken is told so in the
   * channel (`tell`: by this device, when it may still post), its process is stopped, and only
   * then is its key wiped.
   */
  private retire(agent: HostedAgent, reason: string, tell: boolean): void {
    const pubkey = agent.record.pubkey
    agent.retired = reason
    this.agents.delete(pubkey)
    this.permissions.cancelPending(pubkey)
    const running = agent.host.runningJobs()
    const queued = agent.host.dropQueued(() => true)
    this.node.store.prompts.forgetAgent(pubkey)
    this.node.log(`agent ${agent.record.name}: ${reason}; no longer hosted`)
    this.node.agentStatesChanged()
    if (tell) {
      for (const job of running)
        this.noticeAsDevice(
          job,
          `⚠ ${agent.record.name} stopped during this turn: ${reason}; it will not answer`,
        )
      for (const job of queued)
        this.noticeAsDevice(job, `⚠ ${agent.record.name} will not answer: ${reason}`)
    }
    agent.host
      .stop()
      .catch((err: unknown) =>
        this.node.log(`agent ${agent.record.name}: stopping it failed: ${String(err)}`),
      )
      .finally(() => agent.secret.fill(0))
  }

  /**
   * A one-line notice about a prompt, signed by this device (the agent can no longer sign),
   * threaded under the prompt; only while this device may still post.
   */
  private noticeAsDevice(job: PromptJob, text: string): void {
    if (job.prompt === undefined || this.node.stopped()) return
    const { id } = this.node
    if (!this.node.book.verifier.isMember(id.devicePubkey, this.node.now()).ok) return
    const question = this.node.store.events.query([{ ids: [job.prompt] }], {
      defaultLimit: 1,
      maxLimit: 1,
    })[0]
    if (question === undefined) return
    const event = JSON.parse(question.raw) as NostrEvent
    const notice = nodeSigner(this.node)(
      makeReply(
        // It will not answer: a failed outcome, so a reader goes by the tag, not the ⚠.
        { question: event, fleet: this.node.book.fleet, text, outcome: ['failed', 'stopped'] },
        this.node.now(),
      ),
      id.deviceSecret,
    )
    this.node.enqueue(notice)
    this.node.emit(notice)
    this.node.pump()
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
        // Its session's last report said working: it is not any more.
        const thread = threadFor(
          event,
          (t) => this.node.store.agentSession(row.agent, { channel, thread: t }) !== undefined,
        )
        this.sessions.cutShort(row.agent, { channel, ...(thread === undefined ? {} : { thread }) })
        this.replyAs(
          agent,
          event,
          // Read on other devices: it names its host, as their "went offline" line did.
          `⚠ ${agent.record.name} did not answer: its host ${this.node.names.who(this.node.id.devicePubkey).name} stopped during the turn; ask again if it is still needed`,
          { outcome: ['failed', 'stopped'] },
        )
        continue
      }
      this.node.log(`agent ${agent.record.name}: running a prompt queued before the restart`)
      this.prompt(agent, event, channel, true)
    }
  }

  private prompt(agent: HostedAgent, event: NostrEvent, channel: string, resumed: boolean): void {
    if (!this.mayAct(agent, event.pubkey, 'agent.prompt')) {
      this.node.store.prompts.done(event.id, agent.record.pubkey)
      // Everyone in the channel reads it: it names whom it answers, never "you".
      const who = this.node.names.who(event.pubkey)
      this.replyAs(
        agent,
        event,
        `⚠ ${agent.record.name} does not take prompts from ${who.person ?? who.name}: its policy allows ${describePolicy(agent.record.allow)} (its owner sets it: kith agent set ${agent.record.name} --allow)`,
        { outcome: ['refused', 'policy'] },
      )
      return
    }
    const startRefusal = this.startRefusal(agent, event)
    if (startRefusal !== undefined) {
      this.node.store.prompts.done(event.id, agent.record.pubkey)
      this.node.log(
        `agent ${agent.record.name}: refused a session start from ${this.node.names.who(event.pubkey).name}: ${startRefusal}`,
      )
      this.replyAs(
        agent,
        event,
        `⚠ ${agent.record.name} did not start a session: ${startRefusal}`,
        { outcome: ['refused', 'policy'] },
      )
      return
    }
    const text = withoutMention(event.content, agent.record.name)
    const receivedAt = performance.now()
    const timing: { promptSentAt?: number; stopAt?: number } = {}
    const journal = this.node.store.prompts
    journal.add(event.id, agent.record.pubkey, this.node.now())
    const pubkey = agent.record.pubkey
    let route: Route
    try {
      route = routePrompt(this.node, agent, event, channel, resumed)
    } catch (err) {
      // The host does not let it start where it asked (a project, a worktree): said why.
      if (!(err instanceof KithError)) throw err
      journal.done(event.id, pubkey)
      this.replyAs(agent, event, `⚠ ${agent.record.name} did not start a session: ${err.message}`, {
        outcome: ['refused', err.reason === 'limit' ? 'limit' : 'project'],
      })
      return
    }
    const { place, start } = route
    const thread = place.thread
    // `/mode NAME` or `/model NAME` in a thread changes its session instead of prompting.
    const setting = settingCommand(text)
    if (setting !== undefined && !resumed && thread !== event.id) {
      journal.done(event.id, pubkey)
      const request = { action: 'set' as const, ...setting }
      void this.sessionControl(agent, event, place, request)
      return
    }
    // The title of a tool call a person rejected in this turn, if any (see rejectedTurn).
    let rejected: string | undefined
    // What the turn did, kept with its answer: frames show it live but are never stored.
    const work = new WorkLog(route.job.cwd ?? agent.record.cwd)
    const job: PromptJob = {
      ...route.job,
      text,
      from: event.pubkey,
      prompt: event.id,
      timing,
      started: () => {
        journal.running(event.id, agent.record.pubkey)
        this.sessions.status(
          pubkey,
          place,
          'working',
          start === undefined
            ? undefined
            : {
                cwd: start.at.cwd,
                project: start.at.project,
                ...(start.at.worktree === undefined ? {} : { worktree: start.at.worktree }),
              },
        )
        // Watchers see the turn begin at once, before the agent says anything ("working…").
        this.frames.observe(agent, event, { sessionUpdate: 'kith_turn', state: 'started' })
        this.frames.flush(agent, event)
      },
      permission: (ask) => {
        this.sessions.status(pubkey, place, 'awaiting-permission')
        return this.permissions
          .ask(agent, event, ask)
          .then((answer) => {
            const kind = ask.options.find(
              (o) => answer !== 'cancelled' && o.optionId === answer.optionId,
            )?.kind
            if (kind?.startsWith('reject') === true) rejected = ask.title
            return answer
          })
          .finally(() => this.sessions.status(pubkey, place, 'working'))
      },
      update: (u) => {
        work.note(u)
        this.frames.observe(agent, event, u)
      },
      done: (ended) => {
        // A turn ended by this node stopping is answered after its restart (resumeJournal).
        if (this.stopping && !ended.ok) return
        const outcome = rejectedTurn(ended, rejected)
        journal.done(event.id, agent.record.pubkey)
        if (outcome.ok !== true || outcome.steered !== true)
          this.sessions.status(pubkey, place, 'idle')
        // Its last progress goes out before its reply, so no watcher sees them the other way
        // round (frames are coalesced for 100 ms; the reply is sent at once).
        if (outcome.ok !== true || outcome.steered !== true) {
          this.frames.observe(agent, event, {
            sessionUpdate: 'kith_turn',
            state: 'ended',
            outcome: outcome.ok
              ? 'answered'
              : outcome.reason === 'cancelled' || outcome.reason === 'rejected'
                ? 'cancelled'
                : 'failed',
          })
          this.frames.flush(agent, event)
        }
        const reply = this.replyAs(agent, event, replyText(agent.record.name, outcome), {
          work: work.tools(),
          ...(outcome.ok
            ? {}
            : {
                outcome: [
                  outcome.reason === 'cancelled' || outcome.reason === 'rejected'
                    ? 'cancelled'
                    : 'failed',
                  outcome.reason,
                ],
              }),
        })
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
    if (!this.mayAct(agent, event.pubkey, 'agent.interrupt')) {
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
    const running = agent.host.runningIn(job)
    const stops = running?.prompt !== undefined && named.has(running.prompt)
    if (stops) this.permissions.cancelPending(agent.record.pubkey, channel, running.prompt)
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

  /**
   * Why a session start's own settings are refused to its author, or undefined: its mode and its
   * model are the approvers' call, as `session set` is (a mode may stop the agent asking).
   */
  private startRefusal(agent: HostedAgent, event: NostrEvent): string | undefined {
    const asked = event.tags.filter((t) => t[0] === 'mode' || t[0] === 'model')
    if (asked.length === 0 || !event.tags.some((t) => t[0] === 'project')) return undefined
    const refused = asked.filter(
      (t) =>
        !this.mayAct(
          agent,
          event.pubkey,
          t[0] === 'mode' ? 'session.start.mode' : 'session.start.model',
        ),
    )
    if (refused.length === 0) return undefined
    const what = [...new Set(refused.map((t) => t[0]))].join(' or ')
    return `you may not choose its ${what}: its approvers are ${describePolicy(agent.record.approvers)} (start it without --${refused[0]![0]}, or ask one of them)`
  }

  /** What session requests (session-control.ts) use of this bridge. */
  private get sessionDeps(): SessionControlDeps {
    return {
      node: this.node,
      reports: this.sessions,
      agent: (pubkey) => this.agents.get(pubkey),
      mayAct: (agent, key, action) => this.mayAct(agent, key, action),
    }
  }

  /** `/mode` or `/model` in a thread: the approvers policy decides, a notice answers. */
  private async sessionControl(
    agent: HostedAgent,
    event: NostrEvent,
    place: { channel: string; thread?: string },
    request: { action: 'set'; mode?: string; model?: string },
  ): Promise<void> {
    const d = this.sessionDeps
    if (!this.mayAct(agent, event.pubkey, 'session.set')) {
      this.replyAs(
        agent,
        event,
        `⚠ you may not change ${agent.record.name}'s sessions: its approvers are ${describePolicy(agent.record.approvers)}`,
        { notice: true },
      )
      return
    }
    try {
      const set = await agent.host.configure(place, request)
      this.sessions.settings(agent.record.pubkey, place, {
        ...(request.mode === undefined ? {} : { mode: request.mode }),
        ...(request.model === undefined ? {} : { model: set.model?.value ?? request.model }),
      })
      this.replyAs(
        agent,
        event,
        `✓ ${request.mode === undefined ? `model ${request.model}` : `mode ${request.mode}`} set for this session`,
        { notice: true },
      )
    } catch (err) {
      if (!(err instanceof KithError)) throw err
      const cause = err.cause instanceof Error ? `: ${err.cause.message}` : ''
      sessionNotice(
        d,
        agent,
        place,
        `⚠ ${agent.record.name} did not change the session: ${err.message}${cause}`,
        event.id,
        ['failed', 'error'],
      )
    }
  }

  /** Kind 4150 from any device (session-control.ts). */
  applySessionControl(event: NostrEvent): void {
    void applySessionControl(this.sessionDeps, event).catch((err: unknown) =>
      this.node.log(`session request ${event.id.slice(0, 8)} failed: ${String(err)}`),
    )
  }

  /** `kith session close|set` from this device. */
  requestSession(params: Record<string, unknown>): { id: string } {
    return { id: requestSession(this.sessionDeps, params).event.id }
  }

  /** The notice that answered a session request, once here. */
  sessionAnswer(params: Record<string, unknown>): NostrEvent | null {
    if (typeof params.request !== 'string') throw new KithError('usage', 'which request?')
    return sessionAnswer(this.node, params.request) ?? null
  }

  /** Whether any of the prompts (ids) known here mentions `agent`. */
  private addressedTo(prompts: ReadonlySet<string>, agent: string): boolean {
    if (prompts.size === 0) return false
    const ids = [...prompts]
    return this.node.store.events
      .query([{ ids }], { defaultLimit: ids.length, maxLimit: ids.length })
      .some((r) =>
        (JSON.parse(r.raw) as NostrEvent).tags.some((t) => t[0] === 'p' && t[1] === agent),
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
    let parsed: AgentControl
    try {
      parsed = parseAgentControl(control)
    } catch (err) {
      if (!(err instanceof KithError)) throw err
      // Unreadable control events do nothing (they are stored; there is nobody to tell).
      this.node.log(`ignored an agent control event (${control.id.slice(0, 8)}): ${err.message}`)
      return
    }
    const { channel, agents: targets } = parsed
    const named = new Set(parsed.prompts)
    for (const [pubkey, agent] of this.agents) {
      if (targets.length > 0 && !targets.includes(pubkey)) continue
      if (!this.mayAct(agent, control.pubkey, 'agent.cancel')) {
        // Not told in the channel (that would say a turn runs), but the owner's log says who
        // tried to stop this agent's turns and was refused.
        if (targets.includes(pubkey) || this.addressedTo(named, pubkey))
          this.node.log(
            `ignored a cancel for ${agent.record.name} in #${channel} from ${this.node.names.who(control.pubkey).name}: its approvers are ${describePolicy(agent.record.approvers)}`,
          )
        continue
      }
      // Only the turns it names: a cancel made for an earlier turn never stops a later one. Each
      // thread is its own session: the cancel stops the named turns of any of them.
      const inChannel = agent.host.runningInChannel(channel)
      const stopping = inChannel.filter((job) => job.prompt !== undefined && named.has(job.prompt))
      const running = stopping[0] ?? inChannel[0]
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
        // Its sender is told, when the cancel was meant for this agent: never a silent no-op.
        if (targets.includes(pubkey) || this.addressedTo(named, pubkey))
          this.noticeAs(
            pubkey,
            channel,
            running === undefined
              ? `ℹ ${agent.record.name} has no turn running in #${channel}: the cancel from ${this.node.names.who(control.pubkey).name} stopped nothing`
              : `ℹ ${agent.record.name} is running a turn in #${channel} that the cancel from ${this.node.names.who(control.pubkey).name} does not name (a prompt it had not seen): that turn goes on`,
          )
        continue
      }
      for (const job of stopping) {
        this.permissions.cancelPending(pubkey, channel, job.prompt)
        if (agent.host.cancel(job, this.opts.cancelGraceMs))
          this.node.log(`cancelling ${agent.record.name}'s turn in ${describePlace(job)}`)
      }
    }
  }

  /**
   * Sends a cancel (kind 4144) for the agents working in `channel` (all, or one by name). It
   * names the prompts still open there as this node knows them, and the fleet: the hosting node
   * stops a turn only if it is one of those.
   */
  cancelTurn(params: Record<string, unknown>): {
    event: NostrEvent
    prompts: number
    /** Why it may stop nothing (no online device reports running the agent), if so. */
    warning?: string
  } {
    const channel = params.channel
    if (typeof channel !== 'string') throw new KithError('usage', 'cancel needs a channel')
    const names = this.node.names
    const now = this.node.now()
    const isAgent = (pubkey: string) => names.who(pubkey).role === 'agent'
    let agent: string | undefined
    let targets: Set<string>
    if (typeof params.agent === 'string') {
      const pubkey = resolveAgent(names, params.agent, this.node.id.devicePubkey)
      agent = pubkey
      targets = new Set([pubkey])
    } else {
      // A prompt to an agent that is no longer a member waits for no one: it is not open.
      const v = this.node.book.verifier
      targets = new Set(
        v
          .allGrants()
          .filter((g) => g.role === 'agent' && v.isMember(g.subject, now).ok)
          .map((g) => g.subject),
      )
    }
    const who = typeof params.agent === 'string' ? `@${params.agent}` : 'an agent'
    // One prompt's turn only (kith acp cancels the editor's session, not the channel's others).
    const prompts = openPrompts(this.node.store.events, channel, isAgent, targets).filter(
      (id) => typeof params.prompt !== 'string' || id === params.prompt,
    )
    if (prompts.length === 0)
      throw new KithError(
        'not-found',
        `nothing to cancel in #${channel}: no prompt to ${who} there waits for an answer (as this node knows)`,
      )
    const seen = this.seenRunning(channel, prompts, targets)
    if (seen.idle !== undefined)
      throw new KithError('not-found', `nothing to cancel in #${channel}: ${seen.idle}`)
    const control = nodeSigner(this.node)(
      makeAgentCancel(
        {
          channel,
          fleet: this.node.book.fleet,
          ...(agent === undefined ? {} : { agent }),
          prompts,
        },
        now,
      ),
      this.node.id.deviceSecret,
    )
    this.node.enqueue(control)
    this.applyControl(control)
    this.node.pump()
    return {
      event: control,
      prompts: prompts.length,
      ...(seen.unreported === undefined ? {} : { warning: seen.unreported }),
    }
  }

  /**
   * What this node can tell of the agents these open prompts address: `idle`, why a cancel would
   * stop nothing (each runs no turn in the channel, being hosted here, or its device reported it
   * idle after the newest prompt was made); `unreported`, which of them no online device reports
   * running (a cancel for them may stop nothing: their node is down, or runs an older Kith).
   */
  private seenRunning(
    channel: string,
    prompts: string[],
    targets: Set<string>,
  ): { idle?: string; unreported?: string } {
    const events = this.node.store.events
      .query([{ ids: prompts }], { defaultLimit: prompts.length, maxLimit: prompts.length })
      .map((r) => JSON.parse(r.raw) as NostrEvent)
    const newest = Math.max(...events.map((e) => e.created_at))
    const addressed = new Set(
      events.flatMap((e) =>
        e.tags.filter((t) => t[0] === 'p' && targets.has(t[1] ?? '')).map((t) => t[1]!),
      ),
    )
    if (addressed.size === 0) return {}
    const said: string[] = []
    const unreported: string[] = []
    let maybeBusy = false
    for (const agent of addressed) {
      const name = this.node.names.who(agent).name
      const local = this.agents.get(agent)
      if (local !== undefined) {
        if (local.host.busyIn(channel)) maybeBusy = true
        else said.push(`${name} is running no turn here`)
        continue
      }
      const report = this.node.agentReport(agent)
      if (report === undefined) {
        unreported.push(name)
        continue
      }
      // Two seconds of slack: the prompt may come from another device whose clock runs ahead.
      if (
        report.heardAt / 1000 < newest + 2 ||
        !['idle', 'crashed', 'circuit-open'].includes(report.state)
      ) {
        maybeBusy = true
        continue
      }
      said.push(
        `${name} is ${report.state} (its node said so ${Math.round((Date.now() - report.heardAt) / 1000)} s ago)`,
      )
    }
    if (!maybeBusy && unreported.length === 0)
      return {
        idle: `${said.join('; ')}; its prompt${prompts.length === 1 ? '' : 's'} got no answer (kith log '#${channel}')`,
      }
    if (maybeBusy || unreported.length === 0) return {}
    return {
      unreported: `no online device reports running ${unreported.join(', ')} (its node may be down), so this may stop nothing`,
    }
  }

  /** Posts a reply signed by the agent's key, threaded under the question, with its NIP-OA tag. */
  replyAs(
    agent: AgentKey,
    question: NostrEvent,
    text: string,
    opts: ReplyOptions = {},
  ): NostrEvent | undefined {
    if (this.node.stopped()) return undefined
    const createdAt = this.node.now()
    const auth = authTagFor(authTagsOf(agent.record), {
      kind: Kind.ChatMessage,
      created_at: createdAt,
    })
    const extra: string[][] = auth ? [auth] : []
    const maxContent = 60_000
    const content =
      text.length > maxContent
        ? `${text.slice(0, maxContent)}
… (truncated)`
        : text
    // Within what a sealed reply holds with its content (e2e-seal.ts: 40,960 bytes, JSON escapes
    // included); the answer comes first.
    if (opts.work !== undefined && opts.work.length > 0)
      extra.push(
        ...workTags(
          opts.work,
          Math.max(0, Math.min(workMaxBytes, 30_000 - Buffer.byteLength(content, 'utf8'))),
        ),
      )
    const reply = signAsAgent(
      agent,
      makeReply(
        {
          question,
          fleet: this.node.book.fleet,
          text: content,
          ...(opts.notice === undefined ? {} : { notice: opts.notice }),
          ...(opts.outcome === undefined ? {} : { outcome: opts.outcome }),
          extra,
        },
        createdAt,
      ),
      this.node.log,
      `its reply to ${question.id.slice(0, 8)}`,
      nodeSigner(this.node),
    )
    if (reply === undefined) return undefined
    this.node.enqueue(reply)
    this.node.emit(reply)
    this.node.pump()
    return reply
  }

  /** A channel notice signed by a hosted agent (new session, …), not threaded under anything. */
  private noticeAs(agentPubkey: string, channel: string, text: string): void {
    const agent = this.agents.get(agentPubkey)
    if (agent === undefined || this.node.stopped()) return
    postAsAgent(
      this.node,
      agent,
      makeNotice({ channel, fleet: this.node.book.fleet, text }, this.node.now()),
      'a notice',
    )
  }

  /** Answers every open permission request, stops the agents and wipes their keys. */
  async stop(): Promise<void> {
    this.stopping = true
    // Nothing is signed for them from here on: their keys are wiped below.
    for (const a of this.agents.values()) a.retired = 'this node is stopping'
    this.permissions.cancelAll()
    await Promise.all([...this.agents.values()].map((a) => a.host.stop()))
    for (const a of this.agents.values()) a.secret.fill(0)
  }
}
