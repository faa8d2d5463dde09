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
 * Runs the stored parts of REQs a slice at a time, round robin: a connection that asks for
 * 50,000 events gets a slice, then every other waiting connection gets one, so one member's large
 * or repeated REQs cannot stall the rest. A turn of the event loop runs slices until `turnMs` is
 * spent (each waiting connection at most once), then yields: the frames of connections with
 * nothing to stream (an EVENT, a small REQ) wait behind one turn's slices, not behind every
 * waiting connection's.
 */
export class ReqScheduler<C extends Streaming> {
  /** Connections whose REQ has had no slice yet: served first, in arrival order. */
  private readonly fresh = new Set<C>()
  /** Connections streaming on: served round robin after the fresh ones. */
  private readonly again = new Set<C>()
  private scheduled = false

  /** Time REQs answered in their frame's turn took this turn (see `inlineLeft`). */
  private inlineSpent = 0
  private inlineResets = false

  constructor(
    private readonly turnMs = 2,
    /** Runs before each turn (the hub commits what its last poll read: see GroupCommit). */
    private readonly beforeTurn?: () => void,
  ) {}

  /**
   * Main-thread time left in this turn for REQs answered in the turn their frame is read: one
   * `turnMs` a turn for all connections, so a burst of REQ frames read at once costs the frames
   * behind it at most that; a REQ past it waits its turn here.
   */
  inlineLeft(): number {
    return this.turnMs - this.inlineSpent
  }

  spentInline(ms: number): void {
    this.inlineSpent += ms
    if (this.inlineResets) return
    this.inlineResets = true
    setImmediate(() => {
      this.inlineSpent = 0
      this.inlineResets = false
    })
  }

  add(conn: C): void {
    if (!this.again.has(conn)) this.fresh.add(conn)
    this.schedule()
  }

  remove(conn: C): void {
    this.fresh.delete(conn)
    this.again.delete(conn)
  }

  private schedule(): void {
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(() => this.turn())
  }

  /**
   * Those waiting at the turn's start: first the ones whose REQ just arrived (a member's small
   * query waits behind at most one slice of another's large one, not behind a turn of them),
   * then the ones streaming on, oldest first; one that has more goes to the back.
   */
  private turn(): void {
    this.scheduled = false
    this.beforeTurn?.()
    const startedAt = performance.now()
    const order = [...this.fresh, ...this.again]
    for (const conn of order) {
      if (!this.fresh.delete(conn) && !this.again.delete(conn)) continue
      // A connection that is 'blocked' re-adds itself when its client has read.
      if (conn.runSlice() === 'more') this.again.add(conn)
      if (performance.now() - startedAt >= this.turnMs) break
    }
    if (this.fresh.size + this.again.size > 0) this.schedule()
  }
}

/** Who a frame from a connection not authenticated as a member counts as (see `WorkBudget.seen`). */
export const strangerName = ''

/**
 * Main-thread time spent sending REQs' stored parts, per person (all their connections): a token
 * bucket in milliseconds. A person past it waits; one member's queries cannot take more than
 * this share of the hub, however many REQs they send or connections they open.
 *
 * Idle lending: the budget exists so that one person cannot starve the others, so a person past
 * it goes on while no one else has used the hub (sent a frame, or had work charged) for
 * `lendAfterQuietMs`, and what they spend meanwhile is not charged past what they had in hand. A
 * node catching up alone on a quiet hub is not held to a fifth of an idle main thread; the
 * moment anyone else sends a frame, the person is back on their budget (with no debt from the
 * lent time), and that frame waits behind at most the one slice already running.
 */
export class WorkBudget {
  private readonly buckets = new Map<string, { ms: number; at: number }>()
  /** The last two people seen, most recent first, never the same name twice. */
  private last: { name: string; at: number } | undefined
  private beforeLast: { name: string; at: number } | undefined

  constructor(
    private readonly msPerSecond: number,
    private readonly burstMs: number,
    /** 0 never lends. */
    private readonly lendAfterQuietMs = 0,
  ) {}

  /** `name` used the hub at `nowMs`: a frame read (a stranger's as `strangerName`), or work. */
  seen(name: string, nowMs: number): void {
    const last = this.last
    if (last?.name === name) last.at = nowMs
    else {
      // The one before keeps the most recent time of anyone but the new last.
      this.beforeLast = last
      this.last = { name, at: nowMs }
    }
  }

  /** Whether `name` may work past its budget now: no one else has used the hub for a while. */
  lends(name: string, nowMs: number): boolean {
    return this.untilLent(name, nowMs) === 0
  }

  /** Milliseconds until `name` is lent time if no one else comes (Infinity: lending is off). */
  private untilLent(name: string, nowMs: number): number {
    if (this.lendAfterQuietMs <= 0) return Infinity
    const other = this.last?.name === name ? this.beforeLast : this.last
    if (other === undefined) return 0
    return Math.max(0, other.at + this.lendAfterQuietMs - nowMs)
  }

  /**
   * Milliseconds `name` must wait before its next slice; 0 when it may go now. At most until it
   * would be lent time: one who waits asks again then (and waits on if someone came meanwhile).
   */
  wait(name: string, nowMs: number): number {
    if (this.msPerSecond <= 0) return 0
    const b = this.refill(name, nowMs)
    if (b.ms > 0) return 0
    const refilled = Math.ceil(((1 - b.ms) * 1000) / this.msPerSecond)
    return Math.min(refilled, Math.ceil(this.untilLent(name, nowMs)))
  }

  /** Charges `ms` of work to `name`; lent time is not charged past what was in hand. */
  charge(name: string, ms: number, nowMs: number): void {
    if (this.msPerSecond <= 0) return
    this.seen(name, nowMs)
    const b = this.refill(name, nowMs)
    b.ms = this.lends(name, nowMs) ? Math.min(b.ms, Math.max(0, b.ms - ms)) : b.ms - ms
  }

  private refill(name: string, nowMs: number): { ms: number; at: number } {
    let b = this.buckets.get(name)
    if (b === undefined) {
      if (this.buckets.size >= 10_000) this.prune(nowMs)
      b = { ms: this.burstMs, at: nowMs }
      this.buckets.set(name, b)
    }
    b.ms = Math.min(this.burstMs, b.ms + ((nowMs - b.at) / 1000) * this.msPerSecond)
    b.at = nowMs
    return b
  }

  private prune(nowMs: number): void {
    for (const [name, b] of this.buckets) {
      if (b.ms + ((nowMs - b.at) / 1000) * this.msPerSecond >= this.burstMs)
        this.buckets.delete(name)
    }
  }
}
