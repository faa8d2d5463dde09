import { isNotice } from '../events/agent-binding.js'
import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import type { EventStore } from '../store/event-store.js'

/** How many recent messages of a channel are read to find its open prompts. */
const scanMessages = 2000
/** Most prompts one cancel or interrupt names (the newest): hubs take 1,000 tags. */
export const maxBoundPrompts = 50

/**
 * The prompts in `channel` to an agent (to one of `agents` when given) that the agent has not
 * answered yet, as this node has them: newest first, at most `maxBoundPrompts`. A cancel (4144)
 * and an interrupt name these, so they stop only a turn their sender could have seen. An agent's
 * reply answers the prompt its `reply` tag names (else its `root`), unless it is a `["notice"]`
 * (the prompt still waits, or its turn still runs).
 */
export function openPrompts(
  events: EventStore,
  channel: string,
  isAgent: (pubkey: string) => boolean,
  agents?: ReadonlySet<string>,
): string[] {
  const rows = events.query(
    [{ kinds: [Kind.ChatMessage], tags: { h: [channel] }, limit: scanMessages }],
    {
      defaultLimit: scanMessages,
      maxLimit: scanMessages,
    },
  )
  const messages = rows.map((r) => JSON.parse(r.raw) as NostrEvent)
  const agentKeys = new Map<string, boolean>()
  const agent = (pubkey: string) => {
    let known = agentKeys.get(pubkey)
    if (known === undefined) agentKeys.set(pubkey, (known = isAgent(pubkey)))
    return known
  }
  const answered = new Set<string>()
  for (const e of messages) {
    if (!agent(e.pubkey) || isNotice(e)) continue
    const reply = e.tags.find((t) => t[0] === 'e' && t[3] === 'reply')?.[1]
    const root = e.tags.find((t) => t[0] === 'e' && t[3] === 'root')?.[1]
    const question = reply ?? root
    if (question !== undefined) answered.add(`${question}:${e.pubkey}`)
  }
  const open: string[] = []
  for (const e of messages) {
    if (agent(e.pubkey)) continue
    const waiting = e.tags.some(
      (t) =>
        t[0] === 'p' &&
        t[1] !== undefined &&
        (agents === undefined ? agent(t[1]) : agents.has(t[1])) &&
        !answered.has(`${e.id}:${t[1]}`),
    )
    if (waiting) open.push(e.id)
    if (open.length >= maxBoundPrompts) break
  }
  return open
}
