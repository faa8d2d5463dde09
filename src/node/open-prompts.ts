import { openPromptsIn } from '../events/agent-control.js'
import { Kind } from '../events/kinds.js'
import type { NodeReads } from '../store/node-reads.js'

/** How many recent messages of a channel are read to find its open prompts. */
const scanMessages = 2000

/**
 * The prompts in `channel` to an agent (to one of `agents` when given) that the agent has not
 * answered yet, as this node has them: newest first, at most `maxBoundPrompts` (events/agent-control.ts). A cancel (4144)
 * and an interrupt name these, so they stop only a turn their sender could have seen. An agent's
 * reply answers the prompt its `reply` tag names (else its `root`), unless it is a `["notice"]`
 * (the prompt still waits, or its turn still runs).
 */
export function openPrompts(
  reads: NodeReads,
  channel: string,
  isAgent: (pubkey: string) => boolean,
  agents?: ReadonlySet<string>,
): string[] {
  return openPromptsIn(
    reads.events({ kinds: [Kind.ChatMessage], tags: { h: [channel] }, limit: scanMessages }),
    isAgent,
    agents,
  )
}
