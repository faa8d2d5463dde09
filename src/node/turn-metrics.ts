/**
 * Per-turn host overhead (ms): accepted prompt → session/prompt sent ("in"), and stopReason →
 * reply acknowledged by a hub ("out"); the last 1,000 turns, for `npm run bench:agent`.
 */
export class TurnMetrics {
  readonly turns: { inMs: number; outMs: number; turnMs: number }[] = []
  private readonly pendingReplyTiming = new Map<
    string,
    { receivedAt: number; promptSentAt: number; stopAt: number }
  >()

  /** A turn's reply is queued: its "out" time ends when a hub accepts `replyId`. */
  expectReply(
    replyId: string,
    timing: { receivedAt: number; promptSentAt: number; stopAt: number },
  ): void {
    this.pendingReplyTiming.set(replyId, timing)
  }

  /** Told of every event a hub accepts (OK true); only a timed reply ends a measurement. */
  delivered(eventId: string): void {
    const t = this.pendingReplyTiming.get(eventId)
    if (t !== undefined) {
      this.pendingReplyTiming.delete(eventId)
      this.turns.push({
        inMs: t.promptSentAt - t.receivedAt,
        outMs: performance.now() - t.stopAt,
        turnMs: t.stopAt - t.promptSentAt,
      })
      if (this.turns.length > 1000) this.turns.shift()
    }
  }
}
