import type { NostrEvent } from '../events/event.js'

/** The root of the thread an event is in (its `e` tag marked `root`), if it is a reply. */
export function threadRootOf(event: Pick<NostrEvent, 'tags'>): string | undefined {
  return event.tags.find((t) => t[0] === 'e' && t[3] === 'root')?.[1]
}

/**
 * The thread whose session a prompt goes to (issue 16: threads are sessions). A top-level
 * message starts a thread of its own (its id; the agent's reply is threaded under it); a reply
 * goes to its thread's session. A reply in a thread the agent has no session for, in a channel
 * whose main thread has one, goes to the main thread (undefined): that is a thread of before
 * threads were sessions, whose turns all ran in the channel's one session; else the reply starts
 * a session for its thread.
 */
export function threadFor(
  event: Pick<NostrEvent, 'id' | 'tags'>,
  hasSession: (thread: string | undefined) => boolean,
): string | undefined {
  const root = threadRootOf(event)
  if (root === undefined) return event.id
  if (hasSession(root)) return root
  return hasSession(undefined) ? undefined : root
}
