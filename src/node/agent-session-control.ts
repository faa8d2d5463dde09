import { KithError } from '../errors.js'
import type { NostrEvent } from '../events/event.js'
import { describePolicy } from '../grants/policy.js'
import type { AgentRoster } from './agent-roster.js'
import type { AgentVoice } from './agent-voice.js'
import type { HostedAgent, NodeContext } from './node-context.js'
import {
  applySessionControl,
  requestSession,
  sessionAnswer,
  sessionNotice,
  type SessionControlDeps,
} from './session-control.js'
import type { SessionReports } from './sessions.js'

/**
 * The bridge's side of session requests (session-control.ts holds the requests themselves):
 * `/mode` and `/model` in a thread, kind 4150 from any device, and `kith session close|set` from
 * this one, each judged by the agent's approvers policy.
 */
export class AgentSessionControl {
  constructor(
    private readonly node: NodeContext,
    private readonly roster: AgentRoster,
    private readonly reports: SessionReports,
    private readonly voice: AgentVoice,
  ) {}

  /** What session requests (session-control.ts) use of the bridge. */
  private get deps(): SessionControlDeps {
    return {
      node: this.node,
      reports: this.reports,
      agent: (pubkey) => this.roster.agents.get(pubkey),
      mayAct: (agent, key, action) => this.roster.mayAct(agent, key, action),
    }
  }

  /** `/mode` or `/model` in a thread: the approvers policy decides, a notice answers. */
  async setInThread(
    agent: HostedAgent,
    event: NostrEvent,
    place: { channel: string; thread?: string },
    request: { action: 'set'; mode?: string; model?: string },
  ): Promise<void> {
    if (!this.roster.mayAct(agent, event.pubkey, 'session.set')) {
      this.voice.replyAs(
        agent,
        event,
        `⚠ you may not change ${agent.record.name}'s sessions: its approvers are ${describePolicy(agent.record.approvers)}`,
        { notice: true, outcome: ['refused', 'policy'] },
      )
      return
    }
    try {
      const set = await agent.host.configure(place, request)
      this.reports.settings(agent.record.pubkey, place, {
        ...(request.mode === undefined ? {} : { mode: request.mode }),
        ...(request.model === undefined ? {} : { model: set.model?.value ?? request.model }),
      })
      this.voice.replyAs(
        agent,
        event,
        `✓ ${request.mode === undefined ? `model ${request.model}` : `mode ${request.mode}`} set for this session`,
        { notice: true },
      )
    } catch (err) {
      if (!(err instanceof KithError)) throw err
      const cause = err.cause instanceof Error ? `: ${err.cause.message}` : ''
      sessionNotice(
        this.deps,
        agent,
        place,
        `⚠ ${agent.record.name} did not change the session: ${err.message}${cause}`,
        event.id,
        ['failed', 'error'],
      )
    }
  }

  /** Kind 4150 from any device (session-control.ts). */
  apply(event: NostrEvent): void {
    void applySessionControl(this.deps, event).catch((err: unknown) =>
      this.node.log(`session request ${event.id.slice(0, 8)} failed: ${String(err)}`),
    )
  }

  /** `kith session close|set` from this device. */
  request(params: Record<string, unknown>): { id: string } {
    return { id: requestSession(this.deps, params).event.id }
  }

  /** The notice that answered a session request, once here. */
  answer(params: Record<string, unknown>): NostrEvent | null {
    if (typeof params.request !== 'string') throw new KithError('usage', 'which request?')
    return sessionAnswer(this.node, params.request) ?? null
  }
}
