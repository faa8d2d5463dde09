/**
 * Visits every connection once per `periodMs` (the hub pings it and re-checks its grants), a few
 * at a time: each tick (every `tickMs`) visits its share of the set, so 2,000 connections cost
 * ~70 visits a second in small pieces, not one 2,000-socket burst of pings and grant checks every
 * period that every member's frames would wait behind. A sweep starts at most once a period, so
 * a connection is never visited again before its pong had a period to come back. A connection
 * added or removed mid-sweep is visited or skipped (a Set's iterator is live).
 */
export class Heartbeat<C> {
  private cursor: Iterator<C> | undefined
  private nextSweepAt = 0
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly conns: ReadonlySet<C>,
    private readonly periodMs: number,
    private readonly visit: (conn: C) => void,
    private readonly tickMs = Math.min(1000, periodMs),
    private readonly nowMs: () => number = () => performance.now(),
  ) {
    // The first sweep a period after the hub starts, as the connections' first pings are due.
    this.nextSweepAt = nowMs() + periodMs
  }

  start(): void {
    this.timer ??= setInterval(() => this.tick(), this.tickMs)
    this.timer.unref()
  }

  stop(): void {
    clearInterval(this.timer)
    this.timer = undefined
  }

  /** Visits this tick's share: enough that a sweep of the whole set ends within its period. */
  tick(): void {
    if (this.cursor === undefined) {
      const now = this.nowMs()
      if (now < this.nextSweepAt || this.conns.size === 0) return
      this.nextSweepAt = now + this.periodMs
      this.cursor = this.conns[Symbol.iterator]()
    }
    const share = Math.max(1, Math.ceil((this.conns.size * this.tickMs) / this.periodMs))
    for (let i = 0; i < share; i++) {
      const next = this.cursor.next()
      if (next.done === true) {
        this.cursor = undefined
        return
      }
      this.visit(next.value)
    }
  }
}
