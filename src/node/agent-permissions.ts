import { randomBytes } from 'node:crypto'
import { KithError } from '../errors.js'
import { quorumApplies, type Quorum } from '../events/agent-policy.js'
import { channelOf } from '../events/chat.js'
import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { decisionRefusal, parsePermissionDecision } from '../events/permission-decision.js'
import { boundPreview, callPreview } from '../events/permission-preview.js'
import {
  makePermissionRequest,
  parsePermissionRequest,
  permissionInputHash,
  type PermissionRequestContent,
} from '../events/permission-request.js'
import { decisionAction, type Action } from '../grants/authority.js'
import { describePolicy } from '../grants/policy.js'
import {
  quorumOptions,
  tally,
  tallyText,
  voterStanding,
  type QuorumVote,
  type Tally,
} from '../grants/quorum.js'
import type { PermissionAnswer, PermissionAsk } from '../acp/agent-process.js'
import type { AgentRecord } from '../identity/agents.js'
import type { ReplyOptions } from './agent-options.js'
import { nodeSigner, signAsAgent } from './agent-signer.js'
import type { AgentKey, HostedAgent, NodeContext } from './node-context.js'
import { decidedMemoryMs, defaultPermissionTimeoutMs } from './timings.js'

/** What permission requests need of the agent bridge. */
export interface PermissionPeers {
  agent(pubkey: string): HostedAgent | undefined
  /** The id of the agent's policy (kind 34151) in force, as published by this node. */
  policy(agent: string): string | undefined
  mayAct(agent: { record: AgentRecord }, key: string, action: Action): boolean
  replyAs(
    agent: AgentKey,
    question: NostrEvent,
    text: string,
    opts?: ReplyOptions,
  ): NostrEvent | undefined
}

/** At most this many decided requests are remembered (the oldest go first). */
const decidedMemoryMax = 1000

/**
 * What the card shows of the call (what it will do, bounded): read from the request, or from the
 * turn's earlier updates that announced the same call when the request leaves it out.
 */
function previewOf(ask: PermissionAsk): { preview?: string; previewBytes?: number } {
  const seen = ask.announced
  const text = callPreview({
    toolKind: ask.toolKind,
    title: ask.title,
    rawInput: ask.rawInput ?? seen?.rawInput,
    locations: ask.locations ?? seen?.locations ?? null,
    content: ask.content ?? seen?.content,
    ...(ask.cwd === undefined ? {} : { cwd: ask.cwd }),
  })
  return text === undefined ? {} : boundPreview(text)
}

/** A kind-4142 request's content, read by its validating parser (events/permission-request.ts). */
export function parseContent(event: NostrEvent): Partial<PermissionRequestContent> {
  try {
    return parsePermissionRequest(event)
  } catch (err) {
    if (!(err instanceof KithError)) throw err
    // Not a request this node can read: it has no options to choose from.
    return {}
  }
}

/**
 * The option a kind-4143 decision chose, read by its validating parser
 * (events/permission-decision.ts); undefined when it is not a readable decision (it chose nothing).
 */
export function chosenOption(decision: NostrEvent): string | undefined {
  try {
    return parsePermissionDecision(decision).optionId
  } catch (err) {
    if (!(err instanceof KithError)) throw err
    return undefined
  }
}

/**
 * The host's side of permission requests: a hosted agent's tool call put to people as a request
 * (kind 4142), held open until a decision (4143) that binds and comes from someone who may
 * approve (or a quorum of them), a timeout or a cancel answers it. What this device shows and
 * answers of any agent's cards is permission-cards.ts.
 */
export class PermissionRequests {
  /** Permission requests (kind 4142) of hosted agents waiting for a decision (4143). */
  private readonly pending = new Map<
    string,
    {
      agent: string
      /** The prompt whose turn asked; refusals are threaded under it. */
      question: NostrEvent
      channel: string
      title: string
      options: PermissionAsk['options']
      /** Present when the card needs N people; `votes` are the decisions that counted so far. */
      quorum?: Quorum
      votes: QuorumVote[]
      resolve: (a: PermissionAnswer) => void
      timer: NodeJS.Timeout
    }
  >()
  /** Requests decided here lately: a later answer is told it changed nothing. */
  private readonly decided = new Map<
    string,
    { agent: string; question: NostrEvent; title: string; option: string; by: string; at: number }
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
   * timeout answers cancelled, visibly. Each request is its own event (toolCallId, sessionId,
   * input hash and a nonce in its content), so two identical calls make two cards.
   */
  ask(agent: AgentKey, question: NostrEvent, ask: PermissionAsk): Promise<PermissionAnswer> {
    const timeoutMs = this.timeoutMs ?? defaultPermissionTimeoutMs
    const channel = channelOf(question) ?? 'general'
    // A card of a quorum kind needs N people, and offers no "always" (one person's word would
    // then run the agent's next such call).
    const quorum = quorumApplies(agent.record.quorum, ask.toolKind)
      ? agent.record.quorum
      : undefined
    const options = quorum === undefined ? ask.options : quorumOptions(ask.options)
    const policy = this.peers.policy(agent.record.pubkey)
    const content: PermissionRequestContent = {
      title: ask.title,
      toolKind: ask.toolKind,
      options,
      expires: this.node.now() + Math.ceil(timeoutMs / 1000),
      toolCallId: ask.toolCallId,
      sessionId: ask.sessionId,
      input: permissionInputHash(ask),
      nonce: randomBytes(8).toString('hex'),
      ...(ask.sensitive === undefined ? {} : { sensitive: ask.sensitive }),
      ...previewOf(ask),
      ...(policy === undefined ? {} : { policy }),
      ...(quorum === undefined ? {} : { quorum }),
    }
    const request = signAsAgent(
      agent,
      makePermissionRequest(
        {
          ...content,
          channel,
          fleet: this.node.book.fleet,
          prompt: question.id,
          prompter: question.pubkey,
        },
        this.node.now(),
      ),
      this.node.log,
      `a permission request for "${ask.title}"`,
      nodeSigner(this.node),
    )
    // A retired agent asks nobody: the call is cancelled (its turn is being stopped anyway).
    if (request === undefined) return Promise.resolve('cancelled')
    return new Promise<PermissionAnswer>((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(request.id)
        resolve('cancelled')
        this.peers.replyAs(
          agent,
          question,
          `⏱ permission request for "${ask.title}" timed out; the tool call was cancelled`,
          { notice: true },
        )
      }, timeoutMs)
      timer.unref()
      this.pending.set(request.id, {
        agent: agent.record.pubkey,
        question,
        channel,
        title: ask.title,
        options,
        ...(quorum === undefined ? {} : { quorum }),
        votes: [],
        resolve,
        timer,
      })
      this.node.enqueue(request)
      this.node.emit(request)
      this.node.pump()
    })
  }

  /**
   * A kind-4143 decision. The first one this node receives that is bound to the request (its
   * fleet, the request's channel `h` and agent `p`, dated within the bound of agent-binding.ts)
   * and whose author may approve for the agent answers the agent; any other is refused visibly
   * and leaves the request open. An answer to a request already decided here is told so.
   */
  applyDecision(decision: NostrEvent): void {
    const requestId = decision.tags.find((t) => t[0] === 'e')?.[1]
    if (requestId === undefined) return
    const pending = this.pending.get(requestId)
    if (pending === undefined) {
      this.lateDecision(requestId, decision)
      return
    }
    const agent = this.peers.agent(pending.agent)
    if (agent === undefined) return
    const who = this.node.names.who(decision.pubkey).name
    const refusal = this.bindingRefusal(decision, { ...pending, id: requestId })
    if (refusal !== undefined) {
      this.node.log(`refused an answer to ${requestId.slice(0, 8)}: ${refusal}`)
      this.peers.replyAs(
        agent,
        pending.question,
        `⚠ the answer of ${who} to "${pending.title}" was not acted on: ${refusal}; the request is still open`,
        // The answer is refused, not the turn: the card still waits (events/chat.ts turnGoesOn).
        { notice: true, outcome: ['refused', 'still-open'] },
      )
      return
    }
    // Unreadable: it chose nothing (said below, as an unknown option).
    const optionId = chosenOption(decision)
    const option = pending.options.find((o) => o.optionId === optionId)
    if (!this.peers.mayAct(agent, decision.pubkey, decisionAction(option?.kind))) {
      this.peers.replyAs(
        agent,
        pending.question,
        `⚠ ${who} may not approve ${agent.record.name}'s tool calls: its approvers are ${describePolicy(agent.record.approvers)} (kith agent add --approvers); the request is still open`,
        // The answer is refused, not the turn: the card still waits (events/chat.ts turnGoesOn).
        { notice: true, outcome: ['refused', 'still-open'] },
      )
      return
    }
    if (option === undefined) {
      this.peers.replyAs(
        agent,
        pending.question,
        `⚠ the answer of ${who} to "${pending.title}" names no option of the request; the request is still open`,
        // The answer is refused, not the turn: the card still waits (events/chat.ts turnGoesOn).
        { notice: true, outcome: ['refused', 'still-open'] },
      )
      return
    }
    if (pending.quorum !== undefined && !this.quorumMet(agent, pending, decision, option)) return
    clearTimeout(pending.timer)
    this.pending.delete(requestId)
    this.remember(requestId, {
      agent: pending.agent,
      question: pending.question,
      title: pending.title,
      option: option.name,
      by: decision.pubkey,
      at: Date.now(),
    })
    pending.resolve({ optionId: option.optionId })
  }

  /**
   * A decision on a quorum card, from a key that may decide: counted, and whether the card is
   * now decided (enough people allowed, or an approver rejected). While it waits, the channel
   * is told who allowed and how many are still needed; a second allow by the same person (their
   * other device) is told it counts once.
   */
  private quorumMet(
    agent: HostedAgent,
    pending: { question: NostrEvent; title: string; quorum?: Quorum; votes: QuorumVote[] },
    decision: NostrEvent,
    option: { kind: string },
  ): boolean {
    const n = pending.quorum?.n ?? 1
    const standing = this.standing(agent)
    const before = tally(n, pending.votes, standing)
    pending.votes.push({ author: decision.pubkey, optionKind: option.kind })
    const after = tally(n, pending.votes, standing)
    if (after.state !== 'waiting') return true
    const who = this.node.names.who(decision.pubkey).name
    const person = standing(decision.pubkey).person
    const again = person !== undefined && before.allowedBy.includes(person)
    this.peers.replyAs(
      agent,
      pending.question,
      again
        ? `ℹ ${who}'s person already allowed "${pending.title}": two devices of one person count once; ${tallyText(after)}`
        : `✓ ${who} allowed "${pending.title}": ${tallyText(after)}`,
      { notice: true },
    )
    return false
  }

  /** How a deciding key stands toward a hosted agent now (grants/quorum.ts). */
  private standing(agent: HostedAgent): ReturnType<typeof voterStanding> {
    return voterStanding(this.node.book.verifier, this.node.now(), {
      key: agent.record.pubkey,
      owner: this.node.id.ownerPubkey,
      allow: agent.record.allow,
      approvers: agent.record.approvers,
    })
  }

  /** Why a decision is not bound to the request (kith-agents/1, Binding), or undefined. */
  private bindingRefusal(
    decision: NostrEvent,
    request: { id: string; agent: string; channel: string },
  ): string | undefined {
    return decisionRefusal(decision, request, { fleet: this.node.book.fleet, now: this.node.now() })
  }

  /** An answer to a request no longer pending here: where it was decided here, say so. */
  private lateDecision(requestId: string, decision: NostrEvent): void {
    const done = this.decided.get(requestId)
    if (done === undefined) {
      this.closedUndecided(requestId, decision)
      return
    }
    if (done.by === decision.pubkey) return
    const agent = this.peers.agent(done.agent)
    if (
      agent === undefined ||
      !this.peers.mayAct(agent, decision.pubkey, decisionAction(undefined))
    )
      return
    if (
      this.bindingRefusal(decision, {
        id: requestId,
        agent: done.agent,
        channel: channelOf(done.question) ?? 'general',
      }) !== undefined
    )
      return
    this.peers.replyAs(
      agent,
      done.question,
      `ℹ "${done.title}" was already decided: ${done.option} (by ${this.node.names.who(done.by).name}); the answer of ${this.node.names.who(decision.pubkey).name} changed nothing`,
      { notice: true },
    )
  }

  /**
   * An answer to a request of an agent hosted here that closed without a decision (timed out,
   * its turn cancelled or ended): its author is told it changed nothing, as for a decided one.
   */
  private closedUndecided(requestId: string, decision: NostrEvent): void {
    const request = this.node.store.reads.event(requestId)
    if (request === undefined) return
    const agent = this.peers.agent(request.pubkey)
    if (agent === undefined || request.kind !== Kind.PermissionRequest) return
    if (!this.peers.mayAct(agent, decision.pubkey, decisionAction(undefined))) return
    const channel = channelOf(request) ?? 'general'
    if (
      this.bindingRefusal(decision, { id: request.id, agent: request.pubkey, channel }) !==
      undefined
    )
      return
    const prompt = request.tags.find((t) => t[0] === 'e')?.[1]
    const question = prompt === undefined ? undefined : this.node.store.reads.event(prompt)
    if (question === undefined) return
    const title = parseContent(request).title ?? 'a tool call'
    this.peers.replyAs(
      agent,
      question,
      `ℹ the answer of ${this.node.names.who(decision.pubkey).name} to "${title}" came after the request closed (it timed out, or its turn ended); it changed nothing`,
      { notice: true },
    )
  }

  private remember(
    requestId: string,
    entry: {
      agent: string
      question: NostrEvent
      title: string
      option: string
      by: string
      at: number
    },
  ): void {
    const now = Date.now()
    for (const [id, d] of this.decided) {
      if (now - d.at < decidedMemoryMs && this.decided.size < decidedMemoryMax) break
      this.decided.delete(id)
    }
    this.decided.set(requestId, entry)
  }

  /**
   * Answers `cancelled` to the agent's pending permission requests in `channel` (or all), of the
   * turn of `prompt` when given (other threads' turns in the channel go on).
   */
  cancelPending(agent: string, channel?: string, prompt?: string): void {
    for (const [id, p] of this.pending) {
      if (p.agent !== agent || (channel !== undefined && p.channel !== channel)) continue
      if (prompt !== undefined && p.question.id !== prompt) continue
      clearTimeout(p.timer)
      this.pending.delete(id)
      p.resolve('cancelled')
    }
  }

  /** Whether the agent of `pubkey` is hosted here (its requests are decided here). */
  hosts(pubkey: string): boolean {
    return this.peers.agent(pubkey) !== undefined
  }

  /** Whether the request of `id` waits here for a decision. */
  isPending(id: string): boolean {
    return this.pending.has(id)
  }

  /** How the request of `id` was decided here lately, if it was. */
  decidedHere(id: string): { option: string; by: string } | undefined {
    return this.decided.get(id)
  }

  /**
   * The tally of a quorum card of an agent hosted here that still waits: what this node acted
   * on so far (undefined: not hosted here, or not open).
   */
  openTally(request: NostrEvent, n: number): Tally | undefined {
    const hosted = this.peers.agent(request.pubkey)
    const pending = this.pending.get(request.id)
    if (hosted === undefined || pending === undefined) return undefined
    return tally(n, pending.votes, this.standing(hosted))
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
