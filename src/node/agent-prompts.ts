import { KithError } from '../errors.js'
import { channelOf, isInterrupt } from '../events/chat.js'
import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { WorkLog } from '../events/turn-work.js'
import type { PromptJob, TurnOutcome } from '../acp/host.js'
import type { PermissionAnswer, PermissionAsk } from '../acp/agent-process.js'
import { describePolicy } from '../grants/policy.js'
import type { TurnCancels } from './agent-cancels.js'
import type { PermissionRequests } from './agent-permissions.js'
import type { AgentRoster } from './agent-roster.js'
import type { AgentSessionControl } from './agent-session-control.js'
import { replyText, type AgentVoice } from './agent-voice.js'
import type { HostedAgent, NodeContext } from './node-context.js'
import type { ObserverFrames } from './observer-frames.js'
import { settingCommand } from './session-commands.js'
import { routePrompt, type Route } from './session-route.js'
import { threadFor } from './session-threads.js'
import type { SessionReports } from './sessions.js'
import type { TurnMetrics } from './turn-metrics.js'

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

/** The parts of the bridge a prompt's turn goes through. */
export interface PromptPeers {
  roster: AgentRoster
  voice: AgentVoice
  requests: PermissionRequests
  sessions: SessionReports
  frames: ObserverFrames
  metrics: TurnMetrics
  sessionControl: AgentSessionControl
  cancels: TurnCancels
  /** Set once the node is stopping: turns it ends are answered after the restart instead. */
  stopping(): boolean
}

/** One prompt's turn as it runs: what its hooks share. */
interface Turn {
  agent: HostedAgent
  event: NostrEvent
  route: Route
  /** When the prompt came (performance.now()), for the turn's metrics. */
  receivedAt: number
  timing: { promptSentAt?: number; stopAt?: number }
  /** What the turn did, kept with its answer: frames show it live but are never stored. */
  work: WorkLog
  /** The title of a tool call a person rejected in this turn, if any (see rejectedTurn). */
  rejected?: string
}

/**
 * Prompt routing: a chat message that mentions an agent hosted here, admitted by the agent's
 * policy, routed to its session (session-route.ts), and run as a turn whose progress, permission
 * requests and reply go back to the channel. Never silence: a refusal is a reply.
 */
export class PromptRouter {
  constructor(
    private readonly node: NodeContext,
    private readonly peers: PromptPeers,
  ) {}

  /**
   * A chat message that mentions (p tag) an agent hosted here becomes a prompt, if the agent's
   * policy allows its author; otherwise a one-line refusal is posted. Never silence.
   */
  dispatch(event: NostrEvent): void {
    if (event.kind !== Kind.ChatMessage) return
    const channel = channelOf(event)
    if (channel === undefined) return
    const agents = this.peers.roster.agents
    for (const tag of event.tags) {
      if (tag[0] !== 'p' || tag[1] === undefined) continue
      const agent = agents.get(tag[1])
      if (agent === undefined || event.pubkey === tag[1] || agents.has(event.pubkey)) continue
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
      const agent = this.peers.roster.agents.get(row.agent)
      const event = this.node.store.reads.event(row.eventId)
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
        this.peers.sessions.cutShort(row.agent, {
          channel,
          ...(thread === undefined ? {} : { thread }),
        })
        this.peers.voice.replyAs(
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

  /**
   * One prompt to one agent, in named steps: admitted (its author and its session start allowed),
   * routed to its session, taken as a session setting instead where it is one, else made a turn
   * and queued (or run next, for an interrupt).
   */
  private prompt(agent: HostedAgent, event: NostrEvent, channel: string, resumed: boolean): void {
    if (!this.admitted(agent, event)) return
    const text = withoutMention(event.content, agent.record.name)
    const receivedAt = performance.now()
    const route = this.route(agent, event, channel, resumed)
    if (route === undefined) return
    if (this.settingInstead(agent, event, route, text, resumed)) return
    const job = this.turnJob(
      {
        agent,
        event,
        route,
        receivedAt,
        timing: {},
        work: new WorkLog(route.job.cwd ?? agent.record.cwd),
      },
      text,
    )
    if (resumed || !isInterrupt(event)) agent.host.enqueue(job)
    else this.peers.cancels.interrupt(agent, event, job, channel)
  }

  /** Whether the agent takes this prompt from its author; if not, the refusal is its reply. */
  private admitted(agent: HostedAgent, event: NostrEvent): boolean {
    const { roster, voice } = this.peers
    if (!roster.mayAct(agent, event.pubkey, 'agent.prompt')) {
      this.node.store.prompts.done(event.id, agent.record.pubkey)
      // Everyone in the channel reads it: it names whom it answers, never "you".
      const who = this.node.names.who(event.pubkey)
      voice.replyAs(
        agent,
        event,
        `⚠ ${agent.record.name} does not take prompts from ${who.person ?? who.name}: its policy allows ${describePolicy(agent.record.allow)} (its owner sets it: kith agent set ${agent.record.name} --allow)`,
        { outcome: ['refused', 'policy'] },
      )
      return false
    }
    const startRefusal = this.startRefusal(agent, event)
    if (startRefusal !== undefined) {
      this.node.store.prompts.done(event.id, agent.record.pubkey)
      this.node.log(
        `agent ${agent.record.name}: refused a session start from ${this.node.names.who(event.pubkey).name}: ${startRefusal}`,
      )
      voice.replyAs(
        agent,
        event,
        `⚠ ${agent.record.name} did not start a session: ${startRefusal}`,
        {
          outcome: ['refused', 'policy'],
        },
      )
      return false
    }
    return true
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
        !this.peers.roster.mayAct(
          agent,
          event.pubkey,
          t[0] === 'mode' ? 'session.start.mode' : 'session.start.model',
        ),
    )
    if (refused.length === 0) return undefined
    const what = [...new Set(refused.map((t) => t[0]))].join(' or ')
    return `you may not choose its ${what}: its approvers are ${describePolicy(agent.record.approvers)} (start it without --${refused[0]![0]}, or ask one of them)`
  }

  /**
   * The prompt is journaled (answered after a restart if this node stops first), then routed to
   * its session; undefined when the host does not let it start where it asked (said why).
   */
  private route(
    agent: HostedAgent,
    event: NostrEvent,
    channel: string,
    resumed: boolean,
  ): Route | undefined {
    const journal = this.node.store.prompts
    journal.add(event.id, agent.record.pubkey, this.node.now())
    try {
      return routePrompt(this.node, agent, event, channel, resumed)
    } catch (err) {
      // The host does not let it start where it asked (a project, a worktree): said why.
      if (!(err instanceof KithError)) throw err
      journal.done(event.id, agent.record.pubkey)
      this.peers.voice.replyAs(
        agent,
        event,
        `⚠ ${agent.record.name} did not start a session: ${err.message}`,
        { outcome: ['refused', err.reason === 'limit' ? 'limit' : 'project'] },
      )
      return undefined
    }
  }

  /** `/mode NAME` or `/model NAME` in a thread changes its session instead of prompting. */
  private settingInstead(
    agent: HostedAgent,
    event: NostrEvent,
    route: Route,
    text: string,
    resumed: boolean,
  ): boolean {
    const setting = settingCommand(text)
    if (setting === undefined || resumed || route.place.thread === event.id) return false
    this.node.store.prompts.done(event.id, agent.record.pubkey)
    const request = { action: 'set' as const, ...setting }
    void this.peers.sessionControl.setInThread(agent, event, route.place, request)
    return true
  }

  /** The host's job for the turn: its hooks report it to the fleet as it runs. */
  private turnJob(turn: Turn, text: string): PromptJob {
    const { event } = turn
    return {
      ...turn.route.job,
      text,
      from: event.pubkey,
      prompt: event.id,
      timing: turn.timing,
      started: () => this.started(turn),
      permission: (ask) => this.permission(turn, ask),
      update: (u) => {
        turn.work.note(u)
        this.peers.frames.observe(turn.agent, event, u)
      },
      done: (ended) => this.ended(turn, ended),
    }
  }

  /** The turn began: journaled as running, its session reported working, watchers told. */
  private started({ agent, event, route }: Turn): void {
    const { start, place } = route
    this.node.store.prompts.running(event.id, agent.record.pubkey)
    this.peers.sessions.status(
      agent.record.pubkey,
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
    this.peers.frames.observe(agent, event, { sessionUpdate: 'kith_turn', state: 'started' })
    this.peers.frames.flush(agent, event)
  }

  /** One of the turn's tool calls put to people (agent-permissions.ts); a rejection is noted. */
  private permission(turn: Turn, ask: PermissionAsk): Promise<PermissionAnswer> {
    const { agent, event, route } = turn
    const { sessions, requests } = this.peers
    const pubkey = agent.record.pubkey
    sessions.status(pubkey, route.place, 'awaiting-permission')
    return requests
      .ask(agent, event, ask)
      .then((answer) => {
        const kind = ask.options.find(
          (o) => answer !== 'cancelled' && o.optionId === answer.optionId,
        )?.kind
        if (kind?.startsWith('reject') === true) turn.rejected = ask.title
        return answer
      })
      .finally(() => sessions.status(pubkey, route.place, 'working'))
  }

  /** The turn ended: its last progress, then its reply (the answer or why there is none). */
  private ended(turn: Turn, ended: TurnOutcome): void {
    const { agent, event, route, timing } = turn
    const { sessions, frames, voice, metrics } = this.peers
    // A turn ended by this node stopping is answered after its restart (resumeJournal).
    if (this.peers.stopping() && !ended.ok) return
    const outcome = rejectedTurn(ended, turn.rejected)
    this.node.store.prompts.done(event.id, agent.record.pubkey)
    if (outcome.ok !== true || outcome.steered !== true)
      sessions.status(agent.record.pubkey, route.place, 'idle')
    // Its last progress goes out before its reply, so no watcher sees them the other way
    // round (frames are coalesced for 100 ms; the reply is sent at once).
    if (outcome.ok !== true || outcome.steered !== true) {
      frames.observe(agent, event, {
        sessionUpdate: 'kith_turn',
        state: 'ended',
        outcome: outcome.ok
          ? 'answered'
          : outcome.reason === 'cancelled' || outcome.reason === 'rejected'
            ? 'cancelled'
            : 'failed',
      })
      frames.flush(agent, event)
    }
    const reply = voice.replyAs(agent, event, replyText(agent.record.name, outcome), {
      work: turn.work.tools(),
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
    if (reply && outcome.ok && timing.promptSentAt !== undefined && timing.stopAt !== undefined) {
      metrics.expectReply(reply.id, {
        receivedAt: turn.receivedAt,
        promptSentAt: timing.promptSentAt,
        stopAt: timing.stopAt,
      })
    }
  }
}
