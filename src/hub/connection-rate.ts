/**
 * How fast one address may open connections to the hub: a token bucket per address group (IPv4
 * as is, IPv6 by /64: admission.ts `addressGroup`), taken at the HTTP upgrade. Strangers who
 * re-open connections as fast as the hub closes them (lane squatters, AUTH floods) cost the hub
 * a TLS handshake, an upgrade and a challenge each time; this keeps that to `perSecond` an
 * address. Members carry a connect ticket (events/connect-ticket.ts) and are not charged; a
 * connection that authenticates as a member gets its token back.
 *
 * The table is bounded: past `maxAddresses` the least recently seen address is forgotten if its
 * bucket has refilled (forgetting it loses nothing); if even that one is still in debt, the hub
 * is being hit from more addresses than it tracks, and newcomers share one overflow bucket
 * rather than each starting full (which would let an attacker with many addresses reset its own
 * buckets by cycling through them). Members are unaffected: their tickets skip the rate.
 */
export interface ConnectionRateLimits {
  /** New connections per second per address; 0 turns the limit off. */
  perSecond: number
  burst: number
  maxAddresses: number
}

interface Bucket {
  tokens: number
  atMs: number
}

/** The overflow bucket's key: no address group looks like this. */
const overflow = '*overflow*'

export class ConnectionRate {
  /** Least recently seen first (a Map keeps insertion order; a touch re-inserts). */
  private readonly buckets = new Map<string, Bucket>()

  constructor(
    private readonly limits: ConnectionRateLimits,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /**
   * Takes a token for `address`: undefined when it may connect, else the seconds until it may
   * (for Retry-After).
   */
  take(address: string): number | undefined {
    if (this.limits.perSecond <= 0) return undefined
    const bucket = this.bucketOf(address)
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1
      return undefined
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.limits.perSecond))
  }

  /** Whether `address` has no token now (nothing taken, nothing reordered). */
  empty(address: string): boolean {
    if (this.limits.perSecond <= 0) return false
    const bucket = this.buckets.get(address)
    if (bucket === undefined) return false
    const earned = ((this.nowMs() - bucket.atMs) / 1000) * this.limits.perSecond
    return bucket.tokens + earned < 1
  }

  /** Gives `address` its token back (its connection authenticated as a member). */
  refund(address: string): void {
    const bucket = this.buckets.get(address) ?? this.buckets.get(overflow)
    if (bucket !== undefined) bucket.tokens = Math.min(this.limits.burst, bucket.tokens + 1)
  }

  /** Addresses tracked now (the overflow bucket included: at most maxAddresses + 1). */
  get size(): number {
    return this.buckets.size
  }

  private bucketOf(address: string): Bucket {
    const now = this.nowMs()
    let bucket = this.buckets.get(address)
    if (bucket !== undefined) {
      this.buckets.delete(address)
    } else {
      // Each pass forgets one address added earlier, so this loop is paid for by insertions.
      while (this.buckets.size >= this.limits.maxAddresses && this.forgetOldest(now));
      if (this.buckets.size >= this.limits.maxAddresses) {
        address = overflow
        bucket = this.buckets.get(overflow)
        if (bucket !== undefined) this.buckets.delete(overflow)
      }
      bucket ??= { tokens: this.limits.burst, atMs: now }
    }
    this.refill(bucket, now)
    this.buckets.set(address, bucket)
    return bucket
  }

  /** Forgets the least recently seen address if its bucket is full again; false if it is not. */
  private forgetOldest(now: number): boolean {
    for (const [address, bucket] of this.buckets) {
      this.refill(bucket, now)
      if (bucket.tokens < this.limits.burst) return false
      this.buckets.delete(address)
      return true
    }
    return false
  }

  private refill(bucket: Bucket, now: number): void {
    const earned = ((now - bucket.atMs) / 1000) * this.limits.perSecond
    bucket.tokens = Math.min(this.limits.burst, bucket.tokens + earned)
    bucket.atMs = now
  }
}
