import { KithError } from '../errors.js'
import { tagValue, type EventTemplate, type NostrEvent } from './event.js'
import { interruptTags, isNotice, noticeTag } from './agent-binding.js'
import { Kind } from './kinds.js'

const channelPattern = /^[a-z0-9][a-z0-9_.-]{0,63}$/

/** "#ops" or "ops" → "ops"; throws KithError('usage') for anything else. */
export function parseChannel(text: string): string {
  const name = text.trim().replace(/^#/, '').toLowerCase()
  if (!channelPattern.test(name)) {
    throw new KithError('usage', `not a channel name: ${JSON.stringify(text)} (use e.g. #ops)`)
  }
  return name
}

/**
 * The @names a message mentions, lowercased, in order, without repeats; a name may be qualified
 * by its person (`@alice/helper`, `@npub1…/helper`).
 */
export function mentionedNames(text: string): string[] {
  const names: string[] = []
  const mention = /(?:^|[^\w@])@((?:[a-z0-9][a-z0-9_-]{0,63}\/)?[a-z0-9][a-z0-9_-]{0,31})/gi
  for (const m of text.matchAll(mention)) {
    const name = m[1]!.toLowerCase()
    if (!names.includes(name)) names.push(name)
  }
  return names
}

export interface ChatMessageSpec {
  channel: string
  text: string
  /** The message replied to; its own root (if any) becomes this message's root. */
  replyTo?: { id: string; root?: string }
  /** Asks the mentioned agents to stop their running turn here and take this one next. */
  interrupt?: boolean
  /** With `interrupt`: the prompts whose turns it may stop (kith-agents/1, Binding). */
  interruptPrompts?: readonly string[]
  /** The fleet it is made for (a `fleet` tag), so it cannot be replayed into another. */
  fleet?: string
  /** Pubkeys mentioned (resolved from @names). */
  mentions?: string[]
}

/** A kind-9 chat message: `h` = channel, NIP-10 marked `e` tags for threads, `p` = mentions. */
export function makeChatMessage(spec: ChatMessageSpec, createdAt: number): EventTemplate {
  if (spec.text.trim() === '') throw new KithError('usage', 'a message needs some text')
  const tags: string[][] = [['h', spec.channel]]
  if (spec.fleet !== undefined) tags.push(['fleet', spec.fleet])
  if (spec.replyTo !== undefined) {
    const root = spec.replyTo.root ?? spec.replyTo.id
    tags.push(['e', root, '', 'root'])
    if (root !== spec.replyTo.id) tags.push(['e', spec.replyTo.id, '', 'reply'])
  }
  for (const p of spec.mentions ?? []) tags.push(['p', p])
  if (spec.interrupt) tags.push(...interruptTags(spec.interruptPrompts ?? []))
  return { kind: Kind.ChatMessage, created_at: createdAt, tags, content: spec.text }
}

/** Whether a prompt asks to interrupt the running turn (kith-agents/1). */
export function isInterrupt(event: Pick<NostrEvent, 'tags'>): boolean {
  return event.tags.some((t) => t[0] === 'interrupt')
}

export function channelOf(event: Pick<NostrEvent, 'tags'>): string | undefined {
  return tagValue(event, 'h')
}

/** NIP-10 marked thread position: root and direct parent (equal for a first-level reply). */
export function threadOf(event: Pick<NostrEvent, 'tags'>): { root?: string; parent?: string } {
  let root: string | undefined
  let parent: string | undefined
  for (const t of event.tags) {
    if (t[0] !== 'e' || t[1] === undefined) continue
    if (t[3] === 'root') root = t[1]
    else if (t[3] === 'reply') parent = t[1]
  }
  const result: { root?: string; parent?: string } = {}
  if (root !== undefined) result.root = root
  const direct = parent ?? root
  if (direct !== undefined) result.parent = direct
  return result
}

/** An agent reply's `outcome` (kith-agents/1, "Outcome"): how a turn or a request ended. */
export type ReplyOutcome = readonly ['refused' | 'failed' | 'cancelled', string]

export interface ReplySpec {
  /** The message answered: the reply is threaded under it (NIP-10) and names its author. */
  question: Pick<NostrEvent, 'id' | 'pubkey' | 'tags'>
  fleet: string
  text: string
  /** A `["notice"]`: said about the prompt, it does not answer it (open prompts stay open). */
  notice?: boolean
  outcome?: ReplyOutcome
  /** Tags after these, in order (the NIP-OA `auth` tag, the turn's work). */
  extra?: readonly string[][]
}

/**
 * A reply to a message (kind 9): its channel (`general` when it names none), the fleet, NIP-10
 * `root` (the question's own root, else the question) and `reply` (when they differ), the
 * question's author (`p`), then `notice` and `outcome` when given. The one place a reply's thread
 * is derived: the agent's answers and the device's notices under a prompt use it alike.
 */
export function makeReply(spec: ReplySpec, createdAt: number): EventTemplate {
  const { question } = spec
  const root = question.tags.find((t) => t[0] === 'e' && t[3] === 'root')?.[1]
  const tags: string[][] = [
    ['h', channelOf(question) ?? 'general'],
    ['fleet', spec.fleet],
    ['e', root ?? question.id, '', 'root'],
  ]
  if (root !== undefined) tags.push(['e', question.id, '', 'reply'])
  tags.push(['p', question.pubkey])
  if (spec.notice) tags.push([...noticeTag])
  if (spec.outcome) tags.push(['outcome', ...spec.outcome])
  tags.push(...(spec.extra ?? []).map((t) => [...t]))
  return { kind: Kind.ChatMessage, created_at: createdAt, tags, content: spec.text }
}

export interface NoticeSpec {
  channel: string
  fleet: string
  text: string
  /** The thread it is said in (its root); absent: the channel's main thread. */
  thread?: string
  /** A request it answers (`e` … `mention`: it does not thread under it). */
  mention?: string
  /** A `["notice"]` tag (kith-agents/1): it answers no prompt. */
  notice?: boolean
  outcome?: ReplyOutcome
  /** Tags after these (the NIP-OA `auth` tag). */
  extra?: readonly string[][]
}

/** A notice in a channel (kind 9), not a reply to anyone: a new session, a session's change. */
export function makeNotice(spec: NoticeSpec, createdAt: number): EventTemplate {
  const tags: string[][] = [
    ['h', spec.channel],
    ['fleet', spec.fleet],
  ]
  if (spec.thread !== undefined && spec.thread !== '') tags.push(['e', spec.thread, '', 'root'])
  if (spec.mention !== undefined) tags.push(['e', spec.mention, '', 'mention'])
  if (spec.notice) tags.push([...noticeTag])
  if (spec.outcome) tags.push(['outcome', ...spec.outcome])
  tags.push(...(spec.extra ?? []).map((t) => [...t]))
  return { kind: Kind.ChatMessage, created_at: createdAt, tags, content: spec.text }
}

/**
 * Codes of a notice's `outcome` that refuse something said about a running or queued turn, not
 * the turn (kith-agents/1, "Outcome"): `queued` (an interrupt refused; the prompt waits its
 * turn) and `still-open` (an answer to a card not acted on; the card still waits).
 */
export const turnGoesOn: readonly string[] = ['queued', 'still-open']

/**
 * Whether an agent's message under a prompt ends that prompt's turn: a reply that is not a
 * notice answers it; a notice ends it only with an `outcome` whose code is not one of
 * `turnGoesOn`. Every reader of turns (kith chat, the ACP edge, the audit) goes by this.
 */
export function endsTurn(event: Pick<NostrEvent, 'tags'>): boolean {
  if (saysTurnGoesOn(event)) return false
  return outcomeOf(event) !== undefined || !isNotice(event)
}

/** Whether a notice's `outcome` code is one of `turnGoesOn`: it refused a thing, not the turn. */
export function saysTurnGoesOn(event: Pick<NostrEvent, 'tags'>): boolean {
  const outcome = outcomeOf(event)
  return outcome !== undefined && turnGoesOn.includes(outcome.code)
}

/**
 * A reply's or notice's `outcome` (kith-agents/1, "Outcome"), if it carries one: a session
 * notice without one says its request was done; a reply without one answered its prompt.
 */
export function outcomeOf(
  event: Pick<NostrEvent, 'tags'>,
): { kind: string; code: string } | undefined {
  const tag = event.tags.find((t) => t[0] === 'outcome')
  return tag === undefined ? undefined : { kind: tag[1] ?? '', code: tag[2] ?? '' }
}
