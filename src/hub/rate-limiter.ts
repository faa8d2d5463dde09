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
    bucket.tokens = Math.min(
      this.burst,
      bucket.tokens + ((nowMs - bucket.at) / 1000) * this.perSecond,
    )
    bucket.at = nowMs
    const cost = Math.min(n, this.burst)
    if (bucket.tokens < cost) return false
    bucket.tokens -= cost
    return true
  }

  /** Whether `take(name, nowMs, n)` would pass now; takes nothing. */
  has(name: string, nowMs: number, n = 1): boolean {
    if (this.perSecond <= 0) return true
    const bucket = this.buckets.get(name)
    if (bucket === undefined) return true
    const tokens = Math.min(
      this.burst,
      bucket.tokens + ((nowMs - bucket.at) / 1000) * this.perSecond,
    )
    return tokens >= Math.min(n, this.burst)
  }

  /** Gives back the `n` tokens taken for an event refused by a later check. */
  refund(name: string, n = 1): void {
    const bucket = this.buckets.get(name)
    if (bucket !== undefined)
      bucket.tokens = Math.min(this.burst, bucket.tokens + Math.min(n, this.burst))
  }

  /** Forgets buckets that have refilled; they would start full again anyway. */
  private prune(nowMs: number): void {
    for (const [name, b] of this.buckets) {
      if (b.tokens + ((nowMs - b.at) / 1000) * this.perSecond >= this.burst)
        this.buckets.delete(name)
    }
  }
}
