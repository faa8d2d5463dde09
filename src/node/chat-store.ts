import { KithError } from '../errors.js'
import { didYouMean } from '../events/did-you-mean.js'
import { makeChatMessage, mentionedNames, channelOf, threadOf } from '../events/chat.js'
import { signEvent, type EventTemplate, type NostrEvent } from '../events/event.js'
import { isSealed } from '../events/e2e-seal.js'
import { Kind } from '../events/kinds.js'
import type { Identity } from '../identity/keys.js'
import type { NodeStore } from '../store/node-store.js'
import type { Names, Who } from '../grants/names.js'
import { openPrompts } from './open-prompts.js'

export interface ChatItem {
  event: NostrEvent
  from: Who
  channel: string | undefined
  /**
   * The message it answers (its `reply` tag, else its `root`), as known here: its author's name
   * and the start of its text, so a reply shows what it replies to.
   */
  inReplyTo?: { name: string; text: string }
}

/** How much of the message replied to a reply quotes. */
const quoteChars = 60

/** The ChatItem of an event: author and, for a reply, what it answers. */
export function chatItem(store: NodeStore, names: Names, event: NostrEvent): ChatItem {
  const item: ChatItem = { event, from: names.who(event.pubkey), channel: channelOf(event) }
  const { parent } = threadOf(event)
  if (parent === undefined) return item
  const p = store.reads.event(parent)
  if (p === undefined) return item
  const oneLine = p.content.replace(/\s+/g, ' ').trim()
  const text = oneLine.length > quoteChars ? `${oneLine.slice(0, quoteChars - 1)}…` : oneLine
  return { ...item, inReplyTo: { name: names.who(p.pubkey).name, text } }
}

/**
 * Oldest first, and causes before effects: by date, then by arrival here, and an event that
 * answers one listed after it (a fast agent's reply or card dated the same second as its
 * prompt, or a clock behind the prompter's) moves to just after it.
 */
export function causalOrder<T extends { event: NostrEvent; seq?: number }>(items: T[]): T[] {
  const sorted = [...items].sort(
    (a, b) => a.event.created_at - b.event.created_at || (a.seq ?? 0) - (b.seq ?? 0),
  )
  const ids = new Set(sorted.map((i) => i.event.id))
  const placed = new Set<string>()
  const waiting = new Map<string, T[]>()
  const out: T[] = []
  const place = (item: T) => {
    out.push(item)
    placed.add(item.event.id)
    const after = waiting.get(item.event.id)
    if (after === undefined) return
    waiting.delete(item.event.id)
    for (const next of after) place(next)
  }
  for (const item of sorted) {
    const parents = item.event.tags
      .filter((t) => t[0] === 'e' && t[1] !== undefined && t[1] !== item.event.id)
      .map((t) => t[1]!)
    const missing = parents.find((p) => ids.has(p) && !placed.has(p))
    if (missing === undefined) place(item)
    else waiting.set(missing, [...(waiting.get(missing) ?? []), item])
  }
  // A cycle of references (forged events) cannot all be placed after each other: keep them.
  for (const rest of waiting.values())
    for (const item of rest) if (!placed.has(item.event.id)) place(item)
  return out
}

/** A template with `extra` tags after its own. */
function withTags(template: EventTemplate, extra: string[][] | undefined): EventTemplate {
  return extra === undefined ? template : { ...template, tags: [...template.tags, ...extra] }
}

/** A signed chat message from this device, with @mentions resolved to p tags. */
export function buildChat(
  id: Identity,
  names: Names,
  store: NodeStore,
  spec: {
    channel: string
    text: string
    reply?: string
    interrupt?: boolean
    /** Tags added as they are (a session start: events/session-start.ts). */
    extraTags?: string[][]
  },
  /** The node's signer (node/e2e-keys.ts seals when the fleet encrypts). */
  sign: (template: EventTemplate, secret: Uint8Array) => NostrEvent = signEvent,
): NostrEvent {
  // Names resolve among this device's own person's keys first; an ambiguous one is refused.
  // A name that resolves to nobody is refused, never sent unheard: a typo, or an agent that
  // was revoked, would otherwise leave a prompt waiting for an answer that never comes.
  const mentions = [
    ...new Set(
      mentionedNames(spec.text).map((n) => {
        const key = names.resolve(n, id.devicePubkey)
        if (key === undefined)
          throw new KithError('not-found', `not sent: ${names.unknownMention(n, id.devicePubkey)}`)
        return key
      }),
    ),
  ]
  // An interrupt names the turns it may stop: the prompts to those agents still open here.
  const agents = new Set(mentions.filter((p) => names.who(p).role === 'agent'))
  const interruptPrompts =
    spec.interrupt === true && agents.size > 0
      ? openPrompts(store.reads, spec.channel, (p) => names.who(p).role === 'agent', agents)
      : []
  let replyTo: { id: string; root?: string } | undefined
  if (spec.reply !== undefined) {
    const parent = replyParent(store, spec.channel, spec.reply)
    const root = parent.tags.find((t) => t[0] === 'e' && t[3] === 'root')?.[1]
    replyTo = { id: parent.id, ...(root === undefined ? {} : { root }) }
  }
  const signAt = (createdAt: number) =>
    sign(
      withTags(
        makeChatMessage(
          {
            channel: spec.channel,
            text: spec.text,
            mentions,
            ...(replyTo === undefined ? {} : { replyTo }),
            ...(spec.interrupt ? { interrupt: true, interruptPrompts } : {}),
            ...(id.config.fleet === undefined ? {} : { fleet: id.config.fleet }),
          },
          createdAt,
        ),
        spec.extraTags,
      ),
      id.deviceSecret,
    )
  // The same text sent twice within a second would be the same event (NIP-01 ids hash
  // created_at in seconds), and the second prompt would vanish as a duplicate: move it on a second.
  let createdAt = Math.floor(Date.now() / 1000)
  let event = signAt(createdAt)
  while (store.events.knownIds([event.id]).size > 0) event = signAt(++createdAt)
  return event
}

/** Chat messages from node.db, oldest first (the newest `limit` of them). */
/** How far back a short id (a thread as `kith session list` and `kith log --thread` show it) is looked for. */
const replyLookback = 5000

/**
 * The message `--reply ID` answers: by its full id, or by its first 8+ hex among the channel's
 * recent messages (a thread's id as `kith session list` shows it, `#ops/1a2b3c4d`). A prefix two
 * messages share is refused with both, never guessed.
 */
function replyParent(store: NodeStore, channel: string, id: string): NostrEvent {
  const wanted = id.toLowerCase()
  if (!/^[0-9a-f]{8,64}$/.test(wanted))
    throw new KithError('usage', `--reply takes a message id (8 to 64 hex), not ${id}`)
  // A full id is looked up among current events only (never a replaced version kept apart).
  const rows =
    wanted.length === 64
      ? store.reads.events({ ids: [wanted] })
      : store.reads
          .events({ kinds: [Kind.ChatMessage], tags: { h: [channel] }, limit: replyLookback })
          .filter((r) => r.id.startsWith(wanted))
  if (rows.length === 0)
    throw new KithError(
      'not-found',
      `no message ${id} is known in #${channel} here (kith log '#${channel}')`,
    )
  if (rows.length > 1)
    throw new KithError(
      'usage',
      `${rows.length} messages in #${channel} start with ${id}: give more of its id (${rows.map((r) => r.id.slice(0, 12)).join(', ')})`,
    )
  return rows[0]!
}

export function chatHistory(
  store: NodeStore,
  names: Names,
  params: Record<string, unknown>,
): ChatItem[] {
  const filter: Record<string, unknown> = {
    kinds: [Kind.ChatMessage, Kind.PermissionRequest, Kind.PermissionDecision],
  }
  if (typeof params.channel === 'string') filter.tags = { h: [params.channel] }
  if (typeof params.since === 'number') filter.since = params.since
  const limit = typeof params.limit === 'number' ? params.limit : 50
  // An event still sealed (its key has not come, or it was refused) is never shown as a message.
  const events = store.reads
    .withArrival({ ...filter, limit })
    .filter(({ event }) => !isSealed(event))
  return causalOrder(events).map(({ event }) => chatItem(store, names, event))
}

/**
 * The one line for a channel nobody has posted in here: new, or a typo (did you mean). Known
 * channels are those `NodeStore.channels` lists.
 */
export function unknownChannelNote(channel: string, known: readonly string[]): string {
  const near = didYouMean(channel, known)
  return `nobody has posted in #${channel} yet (as this node knows)${near.length === 0 ? '' : `: did you mean ${near.map((c) => `#${c}`).join(' or ')}?`}`
}
