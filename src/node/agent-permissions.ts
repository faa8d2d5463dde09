import { randomBytes } from 'node:crypto'
import { KithError } from '../errors.js'
import { parseAgentPolicy, quorumApplies, type Quorum } from '../events/agent-policy.js'
import { channelOf } from '../events/chat.js'
import type { NostrEvent } from '../events/event.js'
import { isSealed } from '../events/e2e-seal.js'
import { Kind } from '../events/kinds.js'
import {
  decisionRefusal,
  makePermissionDecision,
  parsePermissionDecision,
} from '../events/permission-decision.js'
import { answerWords, optionFor, type AnswerWord } from '../events/permission-options.js'
import { boundPreview, callPreview } from '../events/permission-preview.js'
import {
  makePermissionRequest,
  parsePermissionRequest,
  permissionInputHash,
  type PermissionRequestContent,
} from '../events/permission-request.js'
import { personOf } from '../grants/members.js'
import { policyRefusal } from '../grants/agent-policy-standing.js'
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
import { resolveAgent } from './names.js'
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

/** The content of a kind-4142 request (kith-agents/1): events/permission-request.ts. */
type RequestContent = PermissionRequestContent

/** A permission request still open, as `kith permit` and `/cards` list it. */
export interface OpenCard {
  id: string
  agent: string
  agentPubkey: string
  /** Whose agent it is, when not this node's own person's. */
  person: string | null
  channel: string
  /** The prompt whose turn asked. */
  prompt: string | null
  title: string
  toolKind: string
  options: { optionId: string; name: string; kind: string }[]
  sensitive: string | null
  /** What the call will do (a diff, a command and its cwd, a path), bounded; null: not told. */
  preview: string | null
  /** The whole preview's size in bytes when `preview` was truncated, else null. */
  previewBytes: number | null
  createdAt: number
  expires: number | null
  /**
   * For a card that needs several people (kith-agents "Quorum"): how many, who allowed so far
   * (names), whether this node's person is one of them, and the tally in words.
   */
  quorum: {
    n: number
    for: string[]
    allowedBy: string[]
    mine: boolean
    text: string
  } | null
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
function parseContent(event: NostrEvent): Partial<RequestContent> {
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
function chosenOption(decision: NostrEvent): string | undefined {
  try {
    return parsePermissionDecision(decision).optionId
  } catch (err) {
    if (!(err instanceof KithError)) throw err
    return undefined
  }
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
    const content: RequestContent = {
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
        { notice: true },
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
        { notice: true },
      )
      return
    }
    if (option === undefined) {
      this.peers.replyAs(
        agent,
        pending.question,
        `⚠ the answer of ${who} to "${pending.title}" names no option of the request; the request is still open`,
        { notice: true },
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
    const row = this.node.store.events.query([{ ids: [requestId] }], {
      defaultLimit: 1,
      maxLimit: 1,
    })[0]
    if (row === undefined) return
    const request = JSON.parse(row.raw) as NostrEvent
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
    const question =
      prompt === undefined
        ? undefined
        : this.node.store.events.query([{ ids: [prompt] }], { defaultLimit: 1, maxLimit: 1 })[0]
    if (question === undefined) return
    const title = parseContent(request).title ?? 'a tool call'
    this.peers.replyAs(
      agent,
      JSON.parse(question.raw) as NostrEvent,
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

  /**
   * Why this node's person answering `request` now would change nothing, or undefined: it has
   * expired, it was decided here (this node hosts the agent), or a decision from this node's own
   * person (any of their devices) is already known.
   */
  private closed(request: NostrEvent, content: Partial<RequestContent>): string | undefined {
    const now = this.node.now()
    if (typeof content.expires === 'number' && content.expires < now)
      return `it expired at ${new Date(content.expires * 1000).toISOString().slice(11, 16)} UTC (the tool call was cancelled)`
    const done = this.decided.get(request.id)
    if (done !== undefined)
      return `it was already decided: ${done.option} (by ${this.node.names.who(done.by).name})`
    if (this.peers.agent(request.pubkey) !== undefined && !this.pending.has(request.id))
      return 'it is no longer open (its turn ended or was cancelled)'
    const ended = this.turnEnded(request)
    if (ended !== undefined) return ended
    const v = this.node.book.verifier
    const mine = personOf(v, this.node.id.devicePubkey, now)
    const decisions = this.knownDecisions(request, content)
    // A quorum card is decided by the tally, and stays open to the first approver while it waits.
    const count = this.cardTally(request, content, decisions)
    if (count !== undefined) {
      if (count.state === 'waiting') return undefined
      return count.state === 'rejected'
        ? `it was already decided: rejected (by ${this.node.names.who(count.rejectedBy ?? '').name})`
        : `it was already decided: allowed by ${count.allowedBy.length} people`
    }
    // Known here for certain only of this node's own person: a decision from another person
    // may be refused by the hosting node (which then says so, as it says a late one changed
    // nothing).
    const known = decisions.find((d) => mine !== undefined && personOf(v, d.pubkey, now) === mine)
    if (known === undefined) return undefined
    // Shown by its id below.
    const optionId = chosenOption(known)
    const name = content.options?.find((o) => o.optionId === optionId)?.name ?? String(optionId)
    return `it was already decided: ${name} (by ${this.node.names.who(known.pubkey).name})`
  }

  /** The decisions known here that a hosting node would act on, oldest first. */
  private knownDecisions(request: NostrEvent, content: Partial<RequestContent>): NostrEvent[] {
    return this.node.store.events
      .query([{ kinds: [Kind.PermissionDecision], tags: { e: [request.id] }, limit: 50 }], {
        defaultLimit: 50,
        maxLimit: 50,
      })
      .map((r) => JSON.parse(r.raw) as NostrEvent)
      .filter((d) => this.wouldBind(d, request, content))
      .sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : 1))
  }

  /**
   * A quorum card's tally as this node knows it (undefined: not a quorum card). The hosting node
   * counts what it acted on; any other node counts the decisions it holds, judged by the policy
   * the card names (its approvers; unknown here: the owner's only) through grants/quorum.ts.
   */
  private cardTally(
    request: NostrEvent,
    content: Partial<RequestContent>,
    decisions?: NostrEvent[],
  ): Tally | undefined {
    const quorum = content.quorum
    if (quorum === undefined) return undefined
    const hosted = this.peers.agent(request.pubkey)
    const pending = this.pending.get(request.id)
    if (hosted !== undefined && pending !== undefined)
      return tally(quorum.n, pending.votes, this.standing(hosted))
    const v = this.node.book.verifier
    const now = this.node.now()
    const policyEvent =
      content.policy === undefined ? undefined : this.node.store.events.getEvent(content.policy)
    let policy: ReturnType<typeof parseAgentPolicy> | undefined
    try {
      policy =
        policyEvent === undefined || policyRefusal(policyEvent, v) !== undefined
          ? undefined
          : parseAgentPolicy(policyEvent)
    } catch (err) {
      if (!(err instanceof KithError)) throw err
      policy = undefined
    }
    const standing = voterStanding(v, now, {
      key: request.pubkey,
      owner: personOf(v, request.pubkey, now),
      allow: policy?.allow,
      approvers: policy?.approvers,
    })
    const votes = (decisions ?? this.knownDecisions(request, content)).map((d) => {
      const optionId = chosenOption(d)
      return {
        author: d.pubkey,
        optionKind: content.options?.find((o) => o.optionId === optionId)?.kind,
      }
    })
    return tally(quorum.n, votes, standing)
  }

  /**
   * Why the request's turn is over as this node knows it: the agent answered its prompt (a reply
   * that is not a notice) after asking, or a reply from the hosting device said it stopped.
   */
  private turnEnded(request: NostrEvent): string | undefined {
    const prompt = request.tags.find((t) => t[0] === 'e')?.[1]
    if (prompt === undefined) return undefined
    const answers = this.node.store.events
      .query([{ kinds: [Kind.ChatMessage], tags: { e: [prompt] }, limit: 50 }], {
        defaultLimit: 50,
        maxLimit: 50,
      })
      .map((r) => JSON.parse(r.raw) as NostrEvent)
      .filter(
        (e) =>
          e.pubkey === request.pubkey &&
          e.created_at >= request.created_at &&
          !e.tags.some((t) => t[0] === 'notice'),
      )
    return answers.length === 0
      ? undefined
      : 'its turn has ended (the agent answered its prompt); the tool call was not run on this answer'
  }

  /**
   * Whether a known decision was one a hosting node acts on (bound to the request, dated within
   * its life, naming one of its options): only then does it make a later answer pointless.
   */
  private wouldBind(
    decision: NostrEvent,
    request: NostrEvent,
    content: Partial<RequestContent>,
  ): boolean {
    const card = {
      id: request.id,
      agent: request.pubkey,
      channel: channelOf(request) ?? 'general',
      createdAt: request.created_at,
      ...(typeof content.expires === 'number' ? { expires: content.expires } : {}),
      options: content.options ?? [],
    }
    return decisionRefusal(decision, card, { fleet: this.node.book.fleet }) === undefined
  }

  /**
   * The permission requests still open as this node knows them (not expired, not decided by this
   * person, their turn not over), oldest first; in `channel`, or of `agent`, when given. A card
   * this device cannot open (sealed under an epoch it never had: it joined later) or read is not
   * open for it: it could not answer it (`sealedCards` counts them).
   */
  openCards(params: Record<string, unknown>): OpenCard[] {
    return this.scanCards(params).cards
  }

  /** How many cards in `channel` (or of `agent`) this device holds sealed, unable to open them. */
  sealedCards(params: Record<string, unknown>): number {
    return this.scanCards(params).sealed
  }

  private scanCards(params: Record<string, unknown>): { cards: OpenCard[]; sealed: number } {
    const filter: {
      kinds: number[]
      limit: number
      tags?: Record<string, string[]>
      authors?: string[]
    } = {
      kinds: [Kind.PermissionRequest],
      limit: 500,
    }
    if (typeof params.channel === 'string') filter.tags = { h: [params.channel] }
    if (typeof params.agent === 'string')
      filter.authors = [resolveAgent(this.node.names, params.agent, this.node.id.devicePubkey)]
    const now = this.node.now()
    const cards: OpenCard[] = []
    let sealed = 0
    for (const row of this.node.store.events.query([filter], {
      defaultLimit: 500,
      maxLimit: 500,
    })) {
      const request = JSON.parse(row.raw) as NostrEvent
      if (isSealed(request)) {
        sealed++
        continue
      }
      const content = parseContent(request)
      // Unreadable: no options to answer with.
      if (content.options === undefined) continue
      if (typeof content.expires === 'number' && content.expires < now) continue
      if (this.closed(request, content) !== undefined) continue
      const who = this.node.names.who(request.pubkey)
      cards.push({
        id: request.id,
        agent: who.name,
        agentPubkey: request.pubkey,
        person: who.mine ? null : (who.person ?? null),
        channel: channelOf(request) ?? 'general',
        prompt: request.tags.find((t) => t[0] === 'e')?.[1] ?? null,
        title: content.title ?? '?',
        toolKind: content.toolKind ?? 'other',
        options: content.options ?? [],
        sensitive: content.sensitive ?? null,
        preview: content.preview ?? null,
        previewBytes: content.previewBytes ?? null,
        createdAt: request.created_at,
        expires: typeof content.expires === 'number' ? content.expires : null,
        quorum: this.quorumView(request, content),
      })
    }
    return { cards: cards.reverse(), sealed }
  }

  /** A quorum card's tally as `kith permit`, `kith chat` and the web app show it. */
  private quorumView(request: NostrEvent, content: Partial<RequestContent>): OpenCard['quorum'] {
    const count = this.cardTally(request, content)
    if (count === undefined || content.quorum === undefined) return null
    const mine = personOf(this.node.book.verifier, this.node.id.devicePubkey, this.node.now())
    return {
      n: count.n,
      for: [...content.quorum.for],
      allowedBy: count.allowedBy.map((p) => this.node.names.who(p).name),
      mine: mine !== undefined && count.allowedBy.includes(mine),
      text: tallyText(count),
    }
  }

  /** The known permission request whose id starts with `text` (exactly one). */
  findRequest(text: string): NostrEvent {
    if (!/^[0-9a-f]{4,64}$/.test(text))
      throw new KithError(
        'usage',
        `a request is named by its id (hex, 4 characters or more): ${text}`,
      )
    const rows = this.node.store.events.query([{ kinds: [Kind.PermissionRequest], limit: 500 }], {
      defaultLimit: 500,
      maxLimit: 500,
    })
    const matches = rows.filter((r) => r.id.startsWith(text))
    if (matches.length === 0)
      throw new KithError('not-found', `no permission request ${text} is known here`)
    if (matches.length > 1)
      throw new KithError(
        'usage',
        `${matches.length} requests start with ${text}: give more of its id`,
      )
    return JSON.parse(matches[0]!.raw) as NostrEvent
  }

  /** Signs and sends a decision from this device (kith permit, /allow in kith chat). */
  decide(params: Record<string, unknown>): {
    event: NostrEvent
    request: string
    /** What the answer answered: the request's title and agent, so the answer can name it. */
    title: string
    agent: string
    option: { optionId: string; name: string }
  } {
    const requestText = params.request
    const option = params.option
    if (
      typeof requestText !== 'string' ||
      (typeof option !== 'string' && typeof option !== 'number')
    ) {
      throw new KithError('usage', 'decide needs request and option')
    }
    // @agent: its one open card (in `channel` when given); several are listed, none said so.
    let request: NostrEvent
    if (requestText.startsWith('@')) {
      const open = this.openCards({
        agent: requestText,
        ...(typeof params.channel === 'string' ? { channel: params.channel } : {}),
      })
      if (open.length !== 1)
        throw new KithError(
          open.length === 0 ? 'not-found' : 'usage',
          open.length === 0
            ? `${requestText} has no open permission request${typeof params.channel === 'string' ? ` in #${params.channel}` : ''}`
            : `${requestText} has ${open.length} open requests: ${open.map((c) => `${c.id.slice(0, 8)} "${c.title}"`).join(', ')}; name one by its id`,
        )
      request = this.findRequest(open[0]!.id)
    } else request = this.findRequest(requestText)
    const content = parseContent(request)
    const options = content.options ?? []
    // A word (allow, always, reject) means the option of that kind (permission-options.ts); an
    // option whose id is the word itself is still that option.
    const chosen =
      typeof option === 'number' || /^\d+$/.test(option)
        ? options[Number(option) - 1]
        : (options.find((o) => o.optionId === option) ??
          (answerWords.includes(option as AnswerWord)
            ? optionFor(options, option as AnswerWord)
            : undefined))
    if (chosen === undefined) {
      throw new KithError(
        'usage',
        `option ${String(option)} is not one of: ${options.map((o, i) => `${i + 1} ${o.name}`).join(', ')}`,
      )
    }
    const closed = this.closed(request, content)
    if (closed !== undefined)
      throw new KithError(
        'error',
        `request ${request.id.slice(0, 8)} ("${content.title ?? '?'}"): ${closed}`,
      )
    // A quorum card needs other people: this person's second allow would count for nothing.
    const count = this.cardTally(request, content)
    const mine = personOf(this.node.book.verifier, this.node.id.devicePubkey, this.node.now())
    if (
      count !== undefined &&
      mine !== undefined &&
      count.allowedBy.includes(mine) &&
      chosen.kind.startsWith('allow')
    )
      throw new KithError(
        'error',
        `request ${request.id.slice(0, 8)} ("${content.title ?? '?'}"): you already allowed it (${tallyText(count)})`,
      )
    const decision = nodeSigner(this.node)(
      makePermissionDecision(
        {
          request: {
            id: request.id,
            channel: channelOf(request) ?? 'general',
            agent: request.pubkey,
          },
          fleet: this.node.book.fleet,
          optionId: chosen.optionId,
        },
        this.node.now(),
      ),
      this.node.id.deviceSecret,
    )
    this.node.enqueue(decision)
    this.node.emit(decision)
    this.applyDecision(decision)
    this.node.pump()
    return {
      event: decision,
      request: request.id,
      title: content.title ?? '?',
      agent: this.node.names.who(request.pubkey).name,
      option: chosen,
    }
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
