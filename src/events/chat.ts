import { KithError } from '../errors.js'
import { tagValue, type EventTemplate, type NostrEvent } from './event.js'
import { interruptTags } from './agent-binding.js'
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
