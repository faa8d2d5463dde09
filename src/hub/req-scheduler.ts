import type { StoredStream } from './stored-stream.js'

/** What a connection's turn at the scheduler came to. */
export type SliceOutcome = 'more' | 'idle' | 'blocked'

export interface Streaming {
  /** Sends one slice of the connection's oldest REQ still streaming. */
  runSlice(): SliceOutcome
}

/**
 * One REQ whose stored part is still being sent. Live events for its subscription that arrive
 * meanwhile are held (by id) and sent after EOSE, unless the stored part sends them first, so
 * nothing is missed or sent twice.
 */
export class ReqJob {
  readonly held = new Map<string, string>()
  heldBytes = 0

  constructor(
    readonly subId: string,
    readonly stream: StoredStream,
  ) {}

  /** Holds a live frame; returns the bytes added. */
  hold(id: string, frame: string): number {
    if (this.held.has(id)) return 0
    this.held.set(id, frame)
    this.heldBytes += frame.length
    return frame.length
  }

  /** The stored part just sent `id`: its held live copy is not needed. Returns bytes freed. */
  forget(id: string): number {
    const frame = this.held.get(id)
    if (frame === undefined) return 0
    this.held.delete(id)
    this.heldBytes -= frame.length
    return frame.length
  }
}

/**
 * Runs the stored parts of REQs one slice per connection per turn, round robin: a connection
 * that asks for 50,000 events gets a slice, then every other waiting connection gets one, so one
 * member's large or repeated REQs cannot stall the rest.
 */
export class ReqScheduler<C extends Streaming> {
  private readonly waiting = new Set<C>()
  private scheduled = false

  add(conn: C): void {
    this.waiting.add(conn)
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(() => this.turn())
  }

  remove(conn: C): void {
    this.waiting.delete(conn)
  }

  private turn(): void {
    this.scheduled = false
    const round = [...this.waiting]
    this.waiting.clear()
    for (const conn of round) {
      // A connection that is 'blocked' re-adds itself when its client has read.
      if (conn.runSlice() === 'more') this.waiting.add(conn)
    }
    if (this.waiting.size > 0 && !this.scheduled) {
      this.scheduled = true
      setImmediate(() => this.turn())
    }
  }
}
