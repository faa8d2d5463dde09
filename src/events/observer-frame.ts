import {
  decrypt as nip44Decrypt,
  encrypt as nip44Encrypt,
  getConversationKey,
} from 'nostr-tools/nip44'
import type { EventTemplate, NostrEvent } from './event.js'
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

/** What a frame carries inside its encryption: the prompt whose turn it shows, and its updates. */
export interface ObserverFrameBody {
  prompt: string
  /** ACP session/update notifications of the turn, as the agent sent them. */
  updates: unknown[]
}

/** A frame's content: the body NIP-44 encrypted by the agent (`agentSecret`) to `recipient`. */
export function sealFrameBody(
  body: ObserverFrameBody,
  agentSecret: Uint8Array,
  recipient: string,
): string {
  return nip44Encrypt(JSON.stringify(body), getConversationKey(agentSecret, recipient))
}

/**
 * A frame's body, opened with the recipient's key; undefined when it is not for this key, was
 * tampered with, or does not read as a body (frames are best effort: such a one is dropped).
 */
export function openObserverFrame(
  event: Pick<NostrEvent, 'pubkey' | 'content'>,
  recipientSecret: Uint8Array,
): ObserverFrameBody | undefined {
  let body: unknown
  try {
    body = JSON.parse(
      nip44Decrypt(event.content, getConversationKey(recipientSecret, event.pubkey)),
    ) as unknown
  } catch {
    // Not for this key, or tampered with: the caller drops it.
    return undefined
  }
  if (typeof body !== 'object' || body === null) return undefined
  const { prompt, updates } = body as { prompt?: unknown; updates?: unknown }
  if (typeof prompt !== 'string' || !Array.isArray(updates)) return undefined
  return { prompt, updates: updates as unknown[] }
}
