/**
 * Work that yields to I/O between items: one item per event-loop turn, hub-wide, first come
 * first served. `setImmediate` alone does not yield between items scheduled in the same turn
 * (Node runs every queued immediate in one check phase), so eight reconciliations each reading
 * a slice would hold the loop for all eight slices before any other connection's frame is read.
 * Through this queue each slice waits behind the others and behind the I/O of one poll.
 */
export class TurnQueue {
  private readonly items: (() => void)[] = []
  private scheduled = false

  /** `beforeTurn` runs before each item (the hub commits what its last poll read: see GroupCommit). */
  constructor(private readonly beforeTurn?: () => void) {}

  /** Runs `fn` on a later turn, after what is queued before it; returns a cancel. */
  schedule(fn: () => void): () => void {
    let live = true
    this.items.push(() => {
      if (live) fn()
    })
    this.kick()
    return () => {
      live = false
    }
  }

  get length(): number {
    return this.items.length
  }

  private kick(): void {
    if (this.scheduled || this.items.length === 0) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      const next = this.items.shift()
      this.kick()
      this.beforeTurn?.()
      next?.()
    })
  }
}
