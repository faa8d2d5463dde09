/** Token buckets by name (a person, a key, the hub): `perSecond` sustained, `burst` at once. */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>()

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
  ) {}

  /** Takes one token for `name`; false when its bucket is empty. perSecond 0: always true. */
  take(name: string, nowMs: number): boolean {
    if (this.perSecond <= 0) return true
    let bucket = this.buckets.get(name)
    if (bucket === undefined) {
      if (this.buckets.size >= 10_000) this.prune(nowMs)
      bucket = { tokens: this.burst, at: nowMs }
      this.buckets.set(name, bucket)
    }
    bucket.tokens = Math.min(
      this.burst,
      bucket.tokens + ((nowMs - bucket.at) / 1000) * this.perSecond,
    )
    bucket.at = nowMs
    if (bucket.tokens < 1) return false
    bucket.tokens -= 1
    return true
  }

  /** Gives back a token taken for an event refused by a later check. */
  refund(name: string): void {
    const bucket = this.buckets.get(name)
    if (bucket !== undefined) bucket.tokens = Math.min(this.burst, bucket.tokens + 1)
  }

  /** Forgets buckets that have refilled; they would start full again anyway. */
  private prune(nowMs: number): void {
    for (const [name, b] of this.buckets) {
      if (b.tokens + ((nowMs - b.at) / 1000) * this.perSecond >= this.burst)
        this.buckets.delete(name)
    }
  }
}
