import { KithError } from '../errors.js'
import { isNotice } from './agent-binding.js'
import type { EventTemplate, NostrEvent } from './event.js'
import { Kind } from './kinds.js'
import {
  hexKey,
  invalid,
  jsonObject,
  oneChannel,
  optionalFleet,
  requireKind,
  stringField,
  tagValues,
} from './agent-event-parts.js'

/** Most prompts one cancel or interrupt names (the newest): hubs take 1,000 tags. */
export const maxBoundPrompts = 50
/** How many recent messages of a channel a client reads to find its open prompts. */
export const openPromptScan = 2000

export interface AgentCancelSpec {
  channel: string
  /** The founder's key: a cancel without it is never acted on (kith-agents/1, Binding). */
  fleet: string
  /** One agent (its `p`); absent: every agent the hosting node runs in that channel. */
  agent?: string
  /** The prompts whose turns it may stop: the open ones the sender knows (`openPromptsIn`). */
  prompts: readonly string[]
}

/** A parsed kind-4144 event. */
export interface AgentControl {
  id: string
  author: string
  createdAt: number
  action: 'cancel'
  channel: string
  fleet: string | undefined
  /** The agents it names (`p`); empty: every agent in the channel. */
  agents: string[]
  /** The prompts (`e`) whose turns it may stop; empty: it stops nothing. */
  prompts: string[]
}

/**
 * The unsigned cancel (signed by the requesting device): `h`, `fleet`, the agent's `p` when one
 * is named, then one `e` per prompt, in that order; content `{"action":"cancel"}`. A client that
 * knows no open prompt sends nothing (KithError 'invalid', reason `no-prompts`).
 */
export function makeAgentCancel(spec: AgentCancelSpec, createdAt: number): EventTemplate {
  if (spec.prompts.length === 0)
    throw new KithError('invalid', 'a cancel names at least one open prompt', {
      reason: 'no-prompts',
    })
  if (spec.prompts.length > maxBoundPrompts)
    throw new KithError('invalid', `a cancel names at most ${maxBoundPrompts} prompts`, {
      reason: 'too-many-prompts',
    })
  const tags: string[][] = [
    ['h', spec.channel],
    ['fleet', spec.fleet],
  ]
  if (spec.agent !== undefined) tags.push(['p', spec.agent])
  for (const id of spec.prompts) tags.push(['e', id])
  return {
    kind: Kind.AgentControl,
    created_at: createdAt,
    tags,
    content: JSON.stringify({ action: 'cancel' }),
  }
}

/**
 * Reads a kind-4144 event: one `h`, at most one `fleet`, any `p` and `e`, and the action
 * (`cancel`, the only one). Throws KithError('invalid') with the reason `wrong-kind`,
 * `bad-tags`, `bad-content` or `unknown-action`. A cancel naming no prompt parses (the hosting
 * node answers it "names no turn").
 */
export function parseAgentControl(event: NostrEvent): AgentControl {
  const what = 'agent control'
  requireKind(event, Kind.AgentControl, 'an agent control')
  const channel = oneChannel(event)
  const fleet = optionalFleet(event)
  const agents = tagValues(event, 'p').map((p) => hexKey(p, 'an agent'))
  const prompts = [...new Set(tagValues(event, 'e').map((e) => hexKey(e, 'a prompt id')))]
  const action = stringField(jsonObject(event.content, what), 'action', what)
  if (action !== 'cancel')
    throw new KithError('invalid', `${what}: unknown action ${JSON.stringify(action)}`, {
      reason: 'unknown-action',
    })
  if (agents.length > 0 && new Set(agents).size !== agents.length)
    throw invalid('bad-tags', `${what}: an agent is named twice`)
  return {
    id: event.id,
    author: event.pubkey,
    createdAt: event.created_at,
    action,
    channel,
    fleet,
    agents,
    prompts,
  }
}

/**
 * The open prompts of a channel (kith-agents/1, "Open prompts"): among `messages` (kind 9 of one
 * channel, newest first, the newest `openPromptScan`), those that mention an agent (one of
 * `agents` when given) that has not answered them: a message from the agent whose `e` `reply`
 * tag (else `root`) is the prompt answers it, unless it is a `["notice"]`. Newest first, at most
 * `maxBoundPrompts`. A cancel and an interrupt name these.
 */
export function openPromptsIn(
  messages: readonly NostrEvent[],
  isAgent: (pubkey: string) => boolean,
  agents?: ReadonlySet<string>,
): string[] {
  const known = new Map<string, boolean>()
  const agent = (pubkey: string) => {
    let is = known.get(pubkey)
    if (is === undefined) known.set(pubkey, (is = isAgent(pubkey)))
    return is
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
