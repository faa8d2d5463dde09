import { KithError } from '../errors.js'
import { boundPrompts, checkFresh, requireFleet, type Check } from '../events/agent-binding.js'
import { makeAgentCancel, parseAgentControl, type AgentControl } from '../events/agent-control.js'
import type { NostrEvent } from '../events/event.js'
import type { PromptJob } from '../acp/host.js'
import { describePlace } from '../acp/session-key.js'
import { resolveAgent } from '../grants/names.js'
import { describePolicy } from '../grants/policy.js'
import type { AgentBridgeOptions } from './agent-options.js'
import type { PermissionRequests } from './agent-permissions.js'
import type { AgentRoster } from './agent-roster.js'
import { nodeSigner } from './agent-signer.js'
import type { AgentVoice } from './agent-voice.js'
import type { HostedAgent, NodeContext } from './node-context.js'
import { openPrompts } from './open-prompts.js'

/**
 * Stopping turns: cancels (kind 4144) received, and sent from this device, and interrupts (a
 * prompt that cancels the turn it names and runs next). Each stops only the turns it names, from
 * someone the agent's approvers policy allows, bound to this fleet and to now; one that stops
 * nothing says so where its sender would otherwise think a turn stopped.
 */
export class TurnCancels {
  constructor(
    private readonly node: NodeContext,
    private readonly opts: AgentBridgeOptions,
    private readonly roster: AgentRoster,
    private readonly permissions: PermissionRequests,
    private readonly voice: AgentVoice,
  ) {}

  /**
   * A prompt that interrupts (events/chat.ts isInterrupt): it runs next in its session, and the
   * turn running there stops if the prompt names it. Otherwise it is queued, with a notice saying
   * why it did not interrupt.
   */
  interrupt(agent: HostedAgent, event: NostrEvent, job: PromptJob, channel: string): void {
    // Interrupting is cancelling someone's turn: it takes the approvers policy as well.
    if (!this.roster.mayAct(agent, event.pubkey, 'agent.interrupt')) {
      this.voice.replyAs(
        agent,
        event,
        `⚠ you may not interrupt ${agent.record.name}: its approvers are ${describePolicy(agent.record.approvers)}; your prompt is queued`,
        // The interrupt is refused, not the prompt: its turn goes on (events/chat.ts turnGoesOn).
        { notice: true, outcome: ['refused', 'queued'] },
      )
      agent.host.enqueue(job)
      return
    }
    // ...and it is bound, as a cancel is, to this fleet, to now and to the turns it names.
    const bound = this.bound(event)
    if (!bound.ok) {
      this.node.log(`not interrupting ${agent.record.name} in #${channel}: ${bound.reason}`)
      this.voice.replyAs(
        agent,
        event,
        `⚠ ${agent.record.name} was not interrupted: ${bound.reason}; your prompt is queued`,
        // The interrupt is refused, not the prompt: its turn goes on (events/chat.ts turnGoesOn).
        { notice: true, outcome: ['refused', 'queued'] },
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
      this.voice.replyAs(
        agent,
        event,
        `ℹ ${agent.record.name} is running a turn your interrupt does not name (a prompt it had not seen): that turn goes on, and yours runs next`,
        { notice: true },
      )
  }

  /** Whether any of the prompts (ids) known here mentions `agent`. */
  private addressedTo(prompts: ReadonlySet<string>, agent: string): boolean {
    if (prompts.size === 0) return false
    const ids = [...prompts]
    return this.node.store.reads
      .events({ ids })
      .some((e) => e.tags.some((t) => t[0] === 'p' && t[1] === agent))
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
    for (const [pubkey, agent] of this.roster.agents) {
      if (targets.length > 0 && !targets.includes(pubkey)) continue
      if (!this.roster.mayAct(agent, control.pubkey, 'agent.cancel')) {
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
          this.voice.noticeAs(
            pubkey,
            channel,
            `⚠ ${agent.record.name} ignored a cancel from ${this.node.names.who(control.pubkey).name}: ${refusal}`,
            ['refused', 'cancel'],
          )
        continue
      }
      if (running?.prompt === undefined || !named.has(running.prompt)) {
        this.node.log(
          `a cancel for ${agent.record.name} in #${channel} names no turn running now; nothing stopped`,
        )
        // Its sender is told, when the cancel was meant for this agent: never a silent no-op.
        if (targets.includes(pubkey) || this.addressedTo(named, pubkey))
          this.voice.noticeAs(
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
    const prompts = openPrompts(this.node.store.reads, channel, isAgent, targets).filter(
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
    const events = this.node.store.reads.events({ ids: prompts })
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
      const local = this.roster.agents.get(agent)
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
}
