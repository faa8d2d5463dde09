import { KithError } from '../errors.js'
import { signEvent, tagValue, type NostrEvent } from './event.js'
import { Kind } from './kinds.js'

/** How far an AUTH event's created_at may be from the hub's clock. */
export const authMaxSkewSeconds = 300

/** Normalises a relay URL for comparison: lowercase scheme and host, no default port or slash. */
export function normalizeRelayUrl(url: string): string {
  let parsed: URL
  try {
    parsed = new URL(url.trim())
  } catch (cause) {
    throw new KithError('bad-url', `not a URL: ${url}`, { cause })
  }
  if (parsed.protocol !== 'ws:' && parsed.protocol !== 'wss:') {
    throw new KithError('bad-url', `hub URLs start with ws:// or wss://, got ${url}`)
  }
  if (parsed.username || parsed.password) {
    throw new KithError('bad-url', 'hub URLs must not carry credentials')
  }
  const path = parsed.pathname.replace(/\/+$/, '')
  // URL drops default ports (80 for ws:, 443 for wss:) itself.
  return `${parsed.protocol}//${parsed.host.toLowerCase()}${path}${parsed.search}`
}

export function makeAuthTemplate(relayUrl: string, challenge: string, now: number) {
  return {
    kind: Kind.ClientAuth,
    created_at: now,
    tags: [
      ['relay', relayUrl],
      ['challenge', challenge],
    ],
    content: '',
  }
}

export function signAuthEvent(
  relayUrl: string,
  challenge: string,
  secretKey: Uint8Array,
  now = Math.floor(Date.now() / 1000),
): NostrEvent {
  return signEvent(makeAuthTemplate(relayUrl, challenge, now), secretKey)
}

/**
 * Checks an AUTH event's content against the connection (NIP-42): kind, challenge, relay URL and
 * freshness. The caller has already verified id and signature. Throws KithError('invalid').
 */
export function checkAuthEvent(
  event: NostrEvent,
  expected: { challenge: string; relayUrls: ReadonlySet<string>; now: number },
): void {
  if (event.kind !== Kind.ClientAuth) {
    throw new KithError('invalid', `AUTH event must be kind ${Kind.ClientAuth}`)
  }
  if (tagValue(event, 'challenge') !== expected.challenge) {
    throw new KithError('invalid', 'AUTH challenge does not match this connection')
  }
  const relay = tagValue(event, 'relay')
  let normalized: string | undefined
  try {
    normalized = relay === undefined ? undefined : normalizeRelayUrl(relay)
  } catch {
    // An unparseable relay tag is simply a mismatch, reported below.
    normalized = undefined
  }
  if (normalized === undefined || !expected.relayUrls.has(normalized)) {
    throw new KithError('invalid', `AUTH relay tag does not name this hub (${relay ?? 'missing'})`)
  }
  if (Math.abs(event.created_at - expected.now) > authMaxSkewSeconds) {
    throw new KithError('invalid', `AUTH event is stale (more than ${authMaxSkewSeconds} s off)`)
  }
}
