import { KithError } from '../errors.js'
import { parseAgentPolicy } from '../events/agent-policy.js'
import { channelOf } from '../events/chat.js'
import type { NostrEvent } from '../events/event.js'
import { isSealed } from '../events/e2e-seal.js'
import { Kind } from '../events/kinds.js'
import { decisionRefusal, makePermissionDecision } from '../events/permission-decision.js'
import { answerWords, optionFor, type AnswerWord } from '../events/permission-options.js'
import type { PermissionRequestContent } from '../events/permission-request.js'
import { policyRefusal } from '../grants/agent-policy-standing.js'
import { personOf } from '../grants/members.js'
import { resolveAgent } from '../grants/names.js'
import { tally, tallyText, voterStanding, type Tally } from '../grants/quorum.js'
import { chosenOption, parseContent, type PermissionRequests } from './agent-permissions.js'
import { nodeSigner } from './agent-signer.js'
import type { NodeContext } from './node-context.js'

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

/**
 * This device's card desk: the permission requests (kind 4142) of any agent of the fleet as this
 * node knows them, which are still open to its person (`kith permit`, `/cards` in `kith chat`),
 * and its person's answers (4143), signed by this device. Where this node hosts the agent,
 * the request's life is agent-permissions.ts's, and an answer made here is applied there at once.
 */
export class PermissionCards {
  constructor(
    private readonly node: NodeContext,
    /** The requests of the agents hosted here (decided here, so known for certain). */
    private readonly requests: PermissionRequests,
  ) {}

  /**
   * Why this node's person answering `request` now would change nothing, or undefined: it has
   * expired, it was decided here (this node hosts the agent), or a decision from this node's own
   * person (any of their devices) is already known.
   */
  private closed(
    request: NostrEvent,
    content: Partial<PermissionRequestContent>,
  ): string | undefined {
    const now = this.node.now()
    if (typeof content.expires === 'number' && content.expires < now)
      return `it expired at ${new Date(content.expires * 1000).toISOString().slice(11, 16)} UTC (the tool call was cancelled)`
    const done = this.requests.decidedHere(request.id)
    if (done !== undefined)
      return `it was already decided: ${done.option} (by ${this.node.names.who(done.by).name})`
    if (this.requests.hosts(request.pubkey) && !this.requests.isPending(request.id))
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
  private knownDecisions(
    request: NostrEvent,
    content: Partial<PermissionRequestContent>,
  ): NostrEvent[] {
    return this.node.store.reads
      .events({ kinds: [Kind.PermissionDecision], tags: { e: [request.id] }, limit: 50 })
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
    content: Partial<PermissionRequestContent>,
    decisions?: NostrEvent[],
  ): Tally | undefined {
    const quorum = content.quorum
    if (quorum === undefined) return undefined
    const open = this.requests.openTally(request, quorum.n)
    if (open !== undefined) return open
    const v = this.node.book.verifier
    const now = this.node.now()
    const policyEvent =
      content.policy === undefined ? undefined : this.node.store.reads.event(content.policy)
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
    const answers = this.node.store.reads
      .events({ kinds: [Kind.ChatMessage], tags: { e: [prompt] }, limit: 50 })
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
    content: Partial<PermissionRequestContent>,
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
    for (const request of this.node.store.reads.events(filter)) {
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
  private quorumView(
    request: NostrEvent,
    content: Partial<PermissionRequestContent>,
  ): OpenCard['quorum'] {
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
    const rows = this.node.store.reads.events({ kinds: [Kind.PermissionRequest], limit: 500 })
    const matches = rows.filter((r) => r.id.startsWith(text))
    if (matches.length === 0)
      throw new KithError('not-found', `no permission request ${text} is known here`)
    if (matches.length > 1)
      throw new KithError(
        'usage',
        `${matches.length} requests start with ${text}: give more of its id`,
      )
    return matches[0]!
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
    this.requests.applyDecision(decision)
    this.node.pump()
    return {
      event: decision,
      request: request.id,
      title: content.title ?? '?',
      agent: this.node.names.who(request.pubkey).name,
      option: chosen,
    }
  }
}
