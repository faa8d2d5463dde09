import { KithError } from '../errors.js'
import { makeChatMessage, mentionedNames, channelOf } from '../events/chat.js'
import { signEvent, type NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import type { Identity } from '../identity/keys.js'
import type { NodeStore } from '../store/node-store.js'
import type { Names, Who } from './names.js'
import { openPrompts } from './open-prompts.js'

export interface ChatItem {
  event: NostrEvent
  from: Who
  channel: string | undefined
}

/** A signed chat message from this device, with @mentions resolved to p tags. */
export function buildChat(
  id: Identity,
  names: Names,
  store: NodeStore,
  spec: { channel: string; text: string; reply?: string; interrupt?: boolean },
): NostrEvent {
  // Names resolve among this device's own person's keys first; an ambiguous one is refused.
  const mentions = [
    ...new Set(
      mentionedNames(spec.text)
        .map((n) => names.resolve(n, id.devicePubkey))
        .filter((p): p is string => p !== undefined),
    ),
  ]
  // An interrupt names the turns it may stop: the prompts to those agents still open here.
  const agents = new Set(mentions.filter((p) => names.who(p).role === 'agent'))
  const interruptPrompts =
    spec.interrupt === true && agents.size > 0
      ? openPrompts(store.events, spec.channel, (p) => names.who(p).role === 'agent', agents)
      : []
  let replyTo: { id: string; root?: string } | undefined
  if (spec.reply !== undefined) {
    const parent = store.events.query([{ ids: [spec.reply] }], { defaultLimit: 1, maxLimit: 1 })[0]
    if (parent === undefined) throw new KithError('usage', `no message ${spec.reply} is known here`)
    const root = (JSON.parse(parent.raw) as NostrEvent).tags.find(
      (t) => t[0] === 'e' && t[3] === 'root',
    )?.[1]
    replyTo = { id: spec.reply, ...(root === undefined ? {} : { root }) }
  }
  const sign = (createdAt: number) =>
    signEvent(
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
      id.deviceSecret,
    )
  // The same text sent twice within a second would be the same event (NIP-01 ids hash
  // created_at in seconds), and the second prompt would vanish as a duplicate: move it on a second.
  let createdAt = Math.floor(Date.now() / 1000)
  let event = sign(createdAt)
  while (store.events.knownIds([event.id]).size > 0) event = sign(++createdAt)
  return event
}

/** Chat messages from node.db, oldest first (the newest `limit` of them). */
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
  const rows = store.events.query([{ ...filter, limit }], {
    defaultLimit: limit,
    maxLimit: 100_000,
  })
  return rows.reverse().map((r) => {
    const event = JSON.parse(r.raw) as NostrEvent
    return { event, from: names.who(event.pubkey), channel: channelOf(event) }
  })
}
