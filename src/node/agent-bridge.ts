import type { NostrEvent } from '../events/event.js'
import { TurnCancels } from './agent-cancels.js'
import type { AgentBridgeOptions } from './agent-options.js'
import { PermissionRequests } from './agent-permissions.js'
import { PermissionCards } from './permission-cards.js'
import { AgentPolicies } from './agent-policies.js'
import { PromptRouter } from './agent-prompts.js'
import { AgentRoster } from './agent-roster.js'
import { AgentSessionControl } from './agent-session-control.js'
import { AgentVoice } from './agent-voice.js'
import type { HostedAgent, NodeContext } from './node-context.js'
import { ObserverFrames } from './observer-frames.js'
import { SessionReports } from './sessions.js'
import { TurnMetrics } from './turn-metrics.js'

export type { AgentBridgeOptions, ReplyOptions } from './agent-options.js'

/**
 * The agents this node hosts, bridged to the fleet: @mentions become prompts, tool calls become
 * permission requests (4142/4143), cancels (4144) end turns, and turns are watched (24142). It
 * wires its parts and is what the node calls; each part is its own file:
 *   agent-roster.ts           which agents are hosted, who may do what to them, retiring them
 *   agent-prompts.ts          a mention's path: admitted, routed to a session, run as a turn
 *   agent-cancels.ts          cancels (4144) and interrupts
 *   agent-session-control.ts  session requests (/mode, /model, 4150, kith session)
 *   agent-voice.ts            what the agents say: replies and notices
 *   agent-permissions.ts      the hosted agents' permission requests (4142 out, 4143 in)
 *   permission-cards.ts       this device's cards: what is open to its person, its answers
 */
export class AgentBridge {
  readonly roster: AgentRoster
  readonly metrics = new TurnMetrics()
  /** The hosted agents' permission requests, open until decided (agent-permissions.ts). */
  readonly requests: PermissionRequests
  /** This device's cards: what is open to its person, and its answers (permission-cards.ts). */
  readonly cards: PermissionCards
  /** What the node's intake and control call of both. */
  readonly permissions: {
    applyDecision: PermissionRequests['applyDecision']
    openCards: PermissionCards['openCards']
    sealedCards: PermissionCards['sealedCards']
    decide: PermissionCards['decide']
  }
  /** The hosted agents' policies as published (kind 34151): the cards name the one in force. */
  readonly policies: AgentPolicies
  readonly frames: ObserverFrames
  /** The hosted agents' sessions, reported to the fleet (kind 34150). */
  readonly sessions: SessionReports
  readonly voice: AgentVoice
  private readonly sessionControl: AgentSessionControl
  private readonly cancels: TurnCancels
  private readonly prompts: PromptRouter
  /** Set once the node is stopping: turns it ends are answered after the restart instead. */
  private stopping = false

  constructor(
    private readonly node: NodeContext,
    opts: AgentBridgeOptions,
  ) {
    this.policies = new AgentPolicies(node)
    this.sessions = new SessionReports(node)
    this.roster = new AgentRoster(node, opts, {
      publishPolicy: (record) => this.policies.publish(record),
      cancelPending: (agent, channel, prompt) =>
        this.requests.cancelPending(agent, channel, prompt),
      noticeAs: (agent, channel, text) => this.voice.noticeAs(agent, channel, text),
      noticeAsDevice: (job, text) => this.voice.noticeAsDevice(job, text),
      onSessionOpened: (agent, place, id, report) => this.sessions.opened(agent, place, id, report),
      onSessionInfo: (agent, place, update) => this.sessions.info(agent, place, update),
    })
    this.voice = new AgentVoice(node, (pubkey) => this.roster.agents.get(pubkey))
    this.requests = new PermissionRequests(node, opts.permissionTimeoutMs, {
      policy: (agent) => this.policies.current(agent),
      agent: (pubkey) => this.roster.agents.get(pubkey),
      mayAct: (agent, key, action) => this.roster.mayAct(agent, key, action),
      replyAs: (agent, question, text, o) => this.voice.replyAs(agent, question, text, o),
    })
    this.cards = new PermissionCards(node, this.requests)
    this.permissions = {
      applyDecision: (decision) => this.requests.applyDecision(decision),
      openCards: (params) => this.cards.openCards(params),
      sealedCards: (params) => this.cards.sealedCards(params),
      decide: (params) => this.cards.decide(params),
    }
    this.frames = new ObserverFrames(
      node,
      (pubkey) => this.roster.personOf(pubkey),
      () => this.roster.hostPerson,
    )
    this.sessionControl = new AgentSessionControl(node, this.roster, this.sessions, this.voice)
    this.cancels = new TurnCancels(node, opts, this.roster, this.requests, this.voice)
    this.prompts = new PromptRouter(node, {
      roster: this.roster,
      voice: this.voice,
      requests: this.requests,
      sessions: this.sessions,
      frames: this.frames,
      metrics: this.metrics,
      sessionControl: this.sessionControl,
      cancels: this.cancels,
      stopping: () => this.stopping,
    })
  }

  /** Agents this node hosts, by pubkey. Their secret keys stay in this process. */
  get agents(): Map<string, HostedAgent> {
    return this.roster.agents
  }

  loadAgents(): void {
    this.roster.loadAgents()
  }

  reloadSettings(): void {
    this.roster.reloadSettings()
  }

  enforceMembership(): void {
    this.roster.enforceMembership()
  }

  retireAll(reason: string): void {
    this.roster.retireAll(reason)
  }

  /** A chat message: a prompt for each agent hosted here that it mentions (agent-prompts.ts). */
  dispatch(event: NostrEvent): void {
    this.prompts.dispatch(event)
  }

  resumeJournal(): void {
    this.prompts.resumeJournal()
  }

  /** Agent control (kind 4144) from any device (agent-cancels.ts). */
  applyControl(control: NostrEvent): void {
    this.cancels.applyControl(control)
  }

  /** `kith cancel` from this device (agent-cancels.ts). */
  cancelTurn(params: Record<string, unknown>): ReturnType<TurnCancels['cancelTurn']> {
    return this.cancels.cancelTurn(params)
  }

  /** Kind 4150 from any device (session-control.ts). */
  applySessionControl(event: NostrEvent): void {
    this.sessionControl.apply(event)
  }

  /** `kith session close|set` from this device. */
  requestSession(params: Record<string, unknown>): { id: string } {
    return this.sessionControl.request(params)
  }

  /** The notice that answered a session request, once here. */
  sessionAnswer(params: Record<string, unknown>): NostrEvent | null {
    return this.sessionControl.answer(params)
  }

  /** Answers every open permission request, stops the agents and wipes their keys. */
  async stop(): Promise<void> {
    this.stopping = true
    const agents = [...this.roster.agents.values()]
    // Nothing is signed for them from here on: their keys are wiped below.
    for (const a of agents) a.retired = 'this node is stopping'
    this.requests.cancelAll()
    await Promise.all(agents.map((a) => a.host.stop()))
    for (const a of agents) a.secret.fill(0)
  }
}
