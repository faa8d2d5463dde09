import type { EventTemplate } from './event.js'
import { Kind } from './kinds.js'

/**
 * An observer frame (kind 24142, kith-agents/1) to one recipient, its content already NIP-44
 * encrypted to it. Visible: the recipient (`p`, which the hub routes by) and the channel (`h`, for
 * grants' channel caps). The prompt it belongs to (`e`) is shown only in a fleet that does not
 * seal: in one that does (kith-e2e/1, "What a hub learns") it is inside the content alone, so a
 * hub cannot link a turn's frames to the sealed prompt that started it.
 */
export function makeObserverFrame(
  frame: { recipient: string; channel: string; prompt: string; content: string },
  createdAt: number,
  sealed: boolean,
): EventTemplate {
  return {
    kind: Kind.ObserverFrame,
    created_at: createdAt,
    tags: [['p', frame.recipient], ['h', frame.channel], ...(sealed ? [] : [['e', frame.prompt]])],
    content: frame.content,
  }
}
