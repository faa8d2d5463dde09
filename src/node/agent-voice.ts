import { makeNotice, makeReply, type ReplyOutcome } from '../events/chat.js'
import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { workMaxBytes, workTags } from '../events/turn-work.js'
import type { PromptJob, TurnOutcome } from '../acp/host.js'
import { authTagFor } from '../grants/nip-oa.js'
import { authTagsOf } from '../identity/agents.js'
import type { ReplyOptions } from './agent-options.js'
import { nodeSigner, postAsAgent, signAsAgent } from './agent-signer.js'
import type { AgentKey, HostedAgent, NodeContext } from './node-context.js'

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
 * What hosted agents say in their channels (replies threaded under a prompt, notices), signed by
 * their keys, and the few lines this device says for an agent that can no longer sign. Every
 * line goes out the same way: into the outbox, to this node's listeners, then sent.
 */
export class AgentVoice {
  constructor(
    private readonly node: NodeContext,
    /** The agents hosted here now, by pubkey (a retired one is gone: it says nothing more). */
    private readonly agent: (pubkey: string) => HostedAgent | undefined,
  ) {}

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
    this.send(reply)
    return reply
  }

  /**
   * A channel notice signed by a hosted agent (new session, …), not threaded under anything;
   * one that says something was refused or failed carries its `outcome` (readers go by it).
   */
  noticeAs(agentPubkey: string, channel: string, text: string, outcome?: ReplyOutcome): void {
    const agent = this.agent(agentPubkey)
    if (agent === undefined || this.node.stopped()) return
    postAsAgent(
      this.node,
      agent,
      makeNotice(
        {
          channel,
          fleet: this.node.book.fleet,
          text,
          ...(outcome === undefined ? {} : { outcome }),
        },
        this.node.now(),
      ),
      'a notice',
    )
  }

  /**
   * A one-line notice about a prompt, signed by this device (the agent can no longer sign),
   * threaded under the prompt; only while this device may still post.
   */
  noticeAsDevice(job: PromptJob, text: string): void {
    if (job.prompt === undefined || this.node.stopped()) return
    const { id } = this.node
    if (!this.node.book.verifier.isMember(id.devicePubkey, this.node.now()).ok) return
    const event = this.node.store.reads.event(job.prompt)
    if (event === undefined) return
    const notice = nodeSigner(this.node)(
      makeReply(
        // It will not answer: a failed outcome, so a reader goes by the tag, not the ⚠.
        { question: event, fleet: this.node.book.fleet, text, outcome: ['failed', 'stopped'] },
        this.node.now(),
      ),
      id.deviceSecret,
    )
    this.send(notice)
  }

  private send(event: NostrEvent): void {
    this.node.enqueue(event)
    this.node.emit(event)
    this.node.pump()
  }
}
