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
