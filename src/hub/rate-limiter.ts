/** Token buckets by name (a person, a key, the hub): `perSecond` sustained, `burst` at once. */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>()

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
  ) {}

  /**
   * Takes `n` tokens (at most the burst, so any single event can pass) for `name`; false when its
   * bucket holds fewer. perSecond 0: always true.
   */
  take(name: string, nowMs: number, n = 1): boolean {
    if (this.perSecond <= 0) return true
    let bucket = this.buckets.get(name)
    if (bucket === undefined) {
      if (this.buckets.size >= 10_000) this.prune(nowMs)
      bucket = { tokens: this.burst, at: nowMs }
      this.buckets.set(name, bucket)
    }
    bucket.tokens = this.level(bucket, nowMs)
    bucket.at = nowMs
    if (bucket.tokens < this.cost(n)) return false
    bucket.tokens -= this.cost(n)
    return true
  }

  /** Whether `take(name, nowMs, n)` would pass now; takes nothing. */
  has(name: string, nowMs: number, n = 1): boolean {
    if (this.perSecond <= 0) return true
    const bucket = this.buckets.get(name)
    return bucket === undefined || this.level(bucket, nowMs) >= this.cost(n)
  }

  /** Gives back the `n` tokens taken for an event refused by a later check. */
  refund(name: string, n = 1): void {
    const bucket = this.buckets.get(name)
    if (bucket !== undefined) bucket.tokens = Math.min(this.burst, bucket.tokens + this.cost(n))
  }

  /** What `bucket` holds at `nowMs`, refilled since it was last looked at. */
  private level(bucket: { tokens: number; at: number }, nowMs: number): number {
    return Math.min(this.burst, bucket.tokens + ((nowMs - bucket.at) / 1000) * this.perSecond)
  }

  /** Tokens `n` costs: never more than the burst, so any single event can pass. */
  private cost(n: number): number {
    return Math.min(n, this.burst)
  }

  /** Forgets buckets that have refilled; they would start full again anyway. */
  private prune(nowMs: number): void {
    for (const [name, b] of this.buckets) {
      if (this.level(b, nowMs) >= this.burst) this.buckets.delete(name)
    }
  }
}
