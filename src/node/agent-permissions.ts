import { KithError } from '../errors.js'
import { channelOf } from '../events/chat.js'
import { signEvent, type NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { describePolicy } from '../grants/policy.js'
import type { PermissionAnswer, PermissionAsk } from '../acp/agent-process.js'
import type { AgentRecord } from '../identity/agents.js'
import type { HostedAgent, NodeContext } from './node-context.js'

/** What permission requests need of the agent bridge. */
export interface PermissionPeers {
  agent(pubkey: string): HostedAgent | undefined
  mayUse(agent: { record: AgentRecord }, key: string, which: 'allow' | 'approvers'): boolean
  replyAs(
    agent: { record: AgentRecord; secret: Uint8Array },
    question: NostrEvent,
    text: string,
  ): NostrEvent | undefined
}

/** Hosted agents' tool calls put to people: requests (kind 4142) out, decisions (4143) in. */
export class PermissionRequests {
  /** Permission requests (kind 4142) of hosted agents waiting for a decision (4143). */
  private readonly pending = new Map<
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

  constructor(
    private readonly node: NodeContext,
    /** How long a request waits for a person before it is answered cancelled. */
    private readonly timeoutMs: number | undefined,
    private readonly peers: PermissionPeers,
  ) {}

  /**
   * Turns an agent's permission request into a kind-4142 event (signed by the agent, threaded
   * under the prompt) and waits for a kind-4143 decision from a person allowed to approve; a
   * timeout answers cancelled, visibly.
   */
  ask(
    agent: { record: AgentRecord; secret: Uint8Array },
    question: NostrEvent,
    ask: PermissionAsk,
  ): Promise<PermissionAnswer> {
    const timeoutMs = this.timeoutMs ?? 5 * 60_000
    const request = signEvent(
      {
        kind: Kind.PermissionRequest,
        created_at: this.node.now(),
        tags: [
          ['h', channelOf(question) ?? 'general'],
          ['e', question.id, '', 'root'],
          ['p', question.pubkey],
        ],
        content: JSON.stringify({
          title: ask.title,
          toolKind: ask.toolKind,
          options: ask.options,
          expires: this.node.now() + Math.ceil(timeoutMs / 1000),
        }),
      },
      agent.secret,
    )
    return new Promise<PermissionAnswer>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(request.id)
        resolve('cancelled')
        this.peers.replyAs(
          agent,
          question,
          `⏱ permission request for "${ask.title}" timed out; the tool call was cancelled`,
        )
      }, timeoutMs)
      timer.unref()
      this.pending.set(request.id, {
        agent: agent.record.pubkey,
        question,
        channel: channelOf(question) ?? 'general',
        options: ask.options,
        resolve,
        timer,
      })
      this.node.enqueue(request)
      this.node.emit(request)
      this.node.pump()
    })
  }

  /** A kind-4143 decision: answers the pending request if its author may approve for the agent. */
  applyDecision(decision: NostrEvent): void {
    const requestId = decision.tags.find((t) => t[0] === 'e')?.[1]
    const pending = requestId === undefined ? undefined : this.pending.get(requestId)
    if (pending === undefined || requestId === undefined) return
    const agent = this.peers.agent(pending.agent)
    if (agent === undefined) return
    if (!this.peers.mayUse(agent, decision.pubkey, 'approvers')) {
      this.peers.replyAs(
        agent,
        pending.question,
        `⚠ ${this.node.names.who(decision.pubkey).name} may not approve ${agent.record.name}'s tool calls: its approvers are ${describePolicy(agent.record.approvers)} (kith agent add --approvers); the request is still open`,
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
    this.pending.delete(requestId)
    pending.resolve({ optionId: optionId as string })
  }

  /** Answers `cancelled` to the agent's pending permission requests in `channel` (or all). */
  cancelPending(agent: string, channel?: string): void {
    for (const [id, p] of this.pending) {
      if (p.agent !== agent || (channel !== undefined && p.channel !== channel)) continue
      clearTimeout(p.timer)
      this.pending.delete(id)
      p.resolve('cancelled')
    }
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
    const rows = this.node.store.events.query([{ kinds: [Kind.PermissionRequest], limit: 200 }], {
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
        created_at: this.node.now(),
        tags: [
          ['e', request.id],
          ['h', channelOf(request) ?? 'general'],
          ['p', request.pubkey],
        ],
        content: JSON.stringify({ optionId: chosen.optionId }),
      },
      this.node.id.deviceSecret,
    )
    this.node.enqueue(decision)
    this.node.emit(decision)
    this.applyDecision(decision)
    this.node.pump()
    return { event: decision }
  }

  /** On shutdown: every request still open is answered `cancelled`. */
  cancelAll(): void {
    for (const p of this.pending.values()) {
      clearTimeout(p.timer)
      p.resolve('cancelled')
    }
    this.pending.clear()
  }
}
