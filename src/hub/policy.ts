import { KithError } from '../errors.js'
import type { NostrEvent } from '../events/event.js'
import type { HubLimits } from './limits.js'

/** Size and time checks on an event whose signature and author are already accepted. */
export function checkEventPolicy(event: NostrEvent, limits: HubLimits, now: number): void {
  if (event.created_at > now + limits.maxFutureSeconds) {
    throw new KithError(
      'invalid',
      `created_at is more than ${limits.maxFutureSeconds} s in the future; check the clock`,
    )
  }
  if (Buffer.byteLength(event.content, 'utf8') > limits.maxContentBytes) {
    throw new KithError('invalid', `content is larger than ${limits.maxContentBytes} bytes`)
  }
  if (event.tags.length > limits.maxTags) {
    throw new KithError('invalid', `more than ${limits.maxTags} tags`)
  }
  for (const tag of event.tags) {
    for (const item of tag) {
      if (item.length > limits.maxTagItemLength) {
        throw new KithError('invalid', `a tag item is longer than ${limits.maxTagItemLength}`)
      }
    }
  }
}

/** Token bucket per author key: `perSecond` sustained, `burst` at once. */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>()

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
  ) {}

  /** Takes one token for `key` or throws KithError('rate-limited'). */
  take(key: string, nowMs: number): void {
    if (this.perSecond <= 0) return
    let bucket = this.buckets.get(key)
    if (bucket === undefined) {
      if (this.buckets.size >= 10_000) this.prune(nowMs)
      bucket = { tokens: this.burst, at: nowMs }
      this.buckets.set(key, bucket)
    }
    bucket.tokens = Math.min(
      this.burst,
      bucket.tokens + ((nowMs - bucket.at) / 1000) * this.perSecond,
    )
    bucket.at = nowMs
    if (bucket.tokens < 1) {
      throw new KithError(
        'rate-limited',
        `more than ${this.perSecond} events/s from this key; slow down`,
      )
    }
    bucket.tokens -= 1
  }

  /** Forgets keys whose bucket has refilled; they would start full again anyway. */
  private prune(nowMs: number): void {
    for (const [key, b] of this.buckets) {
      if (b.tokens + ((nowMs - b.at) / 1000) * this.perSecond >= this.burst)
        this.buckets.delete(key)
    }
  }
}
