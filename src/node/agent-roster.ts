import type { PromptJob } from '../acp/host.js'
import type { SessionPlace } from '../acp/session-key.js'
import type { SessionReport } from '../acp/agent-process.js'
import { describePlace } from '../acp/session-key.js'
import { mayActOnAgent, type Action } from '../grants/authority.js'
import { personOf } from '../grants/members.js'
import { listAgentRecords, type AgentRecord } from '../identity/agents.js'
import { hostAgent } from './agent-loader.js'
import type { AgentBridgeOptions } from './agent-options.js'
import type { HostedAgent, NodeContext } from './node-context.js'

/** What the roster needs of the rest of the bridge, as it starts, changes and retires agents. */
export interface RosterPeers {
  /** Publishes the agent's policy (kind 34151) as its record says it. */
  publishPolicy(record: AgentRecord): void
  /** Answers `cancelled` to the agent's pending permission requests (of one turn, when named). */
  cancelPending(agent: string, channel?: string, prompt?: string): void
  /** A channel notice signed by the agent. */
  noticeAs(agent: string, channel: string, text: string): void
  /** A notice under a prompt, signed by this device (the agent can no longer sign). */
  noticeAsDevice(job: PromptJob, text: string): void
  onSessionOpened(agent: string, place: SessionPlace, id: string, report?: SessionReport): void
  onSessionInfo(agent: string, place: SessionPlace, update: unknown): void
}

/**
 * The agents this node hosts, by pubkey (their secret keys stay in this process): which are
 * started (only those whose key is granted), what each may be asked by whom (the authority
 * table), and their retirement when their key, or this node, leaves the fleet.
 */
export class AgentRoster {
  /** Agents this node hosts, by pubkey. Their secret keys stay in this process. */
  readonly agents = new Map<string, HostedAgent>()
  /** Agents (pubkeys) already said to be not started because their key is not granted. */
  private readonly notStarted = new Set<string>()

  constructor(
    private readonly node: NodeContext,
    private readonly opts: AgentBridgeOptions,
    private readonly peers: RosterPeers,
  ) {}

  /**
   * The person every agent hosted here belongs to, for its policies and observers: this node's
   * own owner (its config and identity), never whatever grants of the agent's key a hub shows.
   * undefined (a node that knows no owner): nobody but that owner could be allowed, so nobody is.
   */
  get hostPerson(): string | undefined {
    return this.node.id.ownerPubkey
  }

  /** The person (owner key) a key belongs to: the nearest owner of its chain, or the founder. */
  personOf(pubkey: string): string | undefined {
    return personOf(this.node.book.verifier, pubkey, this.node.now())
  }

  /** Whether `key` may take `action` on `agent` now: the authority table (grants/authority.ts). */
  mayAct(agent: { record: AgentRecord }, key: string, action: Action): boolean {
    const r = agent.record
    const standing = {
      key: r.pubkey,
      owner: this.hostPerson,
      allow: r.allow,
      approvers: r.approvers,
    }
    return mayActOnAgent(this.node.book.verifier, key, this.node.now(), standing, action)
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
          this.peers.noticeAs(
            record.pubkey,
            place.channel,
            `ℹ ${record.name} started a new session in ${describePlace(place)}: ${reason}`,
          ),
        {
          onSessionOpened: (place, id, report) =>
            this.peers.onSessionOpened(record.pubkey, place, id, report),
          onSessionInfo: (place, update) => this.peers.onSessionInfo(record.pubkey, place, update),
        },
      )
      if (agent === undefined) continue
      this.agents.set(record.pubkey, agent)
      this.peers.publishPolicy(record)
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
      this.peers.publishPolicy(record)
      this.node.log(`agent ${record.name}: settings updated`)
    }
    this.loadAgents()
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
        this.peers.cancelPending(agent.record.pubkey, job.channel, job.prompt)
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
    this.peers.cancelPending(pubkey)
    const running = agent.host.runningJobs()
    const queued = agent.host.dropQueued(() => true)
    this.node.store.prompts.forgetAgent(pubkey)
    this.node.log(`agent ${agent.record.name}: ${reason}; no longer hosted`)
    this.node.agentStatesChanged()
    if (tell) {
      for (const job of running)
        this.peers.noticeAsDevice(
          job,
          `⚠ ${agent.record.name} stopped during this turn: ${reason}; it will not answer`,
        )
      for (const job of queued)
        this.peers.noticeAsDevice(job, `⚠ ${agent.record.name} will not answer: ${reason}`)
    }
    agent.host
      .stop()
      .catch((err: unknown) =>
        this.node.log(`agent ${agent.record.name}: stopping it failed: ${String(err)}`),
      )
      .finally(() => agent.secret.fill(0))
  }
}
