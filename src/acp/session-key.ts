/**
 * Where a session lives: a channel and a thread in it. Each thread of a channel is its own ACP
 * session (a top-level mention starts one; replies continue it); `thread` absent is the
 * channel's main thread, which carries on the one session per channel of earlier versions.
 */
export interface SessionPlace {
  channel: string
  /** The thread's root event id; absent: the channel's main thread. */
  thread?: string | undefined
}

/**
 * The host's key for a place: the channel name for its main thread, `channel/root` for a
 * thread (a channel name holds no `/`, so the two never collide).
 */
export function sessionKey(place: SessionPlace): string {
  return place.thread === undefined || place.thread === ''
    ? place.channel
    : `${place.channel}/${place.thread}`
}

/** How a place is named in log lines and notices: `#ops` or `#ops (thread 1a2b3c4d)`. */
export function describePlace(place: SessionPlace): string {
  return place.thread === undefined || place.thread === ''
    ? `#${place.channel}`
    : `#${place.channel} (thread ${place.thread.slice(0, 8)})`
}
