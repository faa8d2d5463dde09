import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { isKithError } from '../../src/errors.js'
import { signEvent } from '../../src/events/event.js'
import {
  checkAuthEvent,
  makeAuthTemplate,
  normalizeRelayUrl,
  signAuthEvent,
} from '../../src/events/nip42.js'

const sk = generateSecretKey()
const now = 1_700_000_000
const expected = { challenge: 'c1', relayUrls: new Set(['ws://127.0.0.1:7447']), now }

function refusal(event: ReturnType<typeof signEvent>): string {
  try {
    checkAuthEvent(event, expected)
  } catch (err) {
    if (isKithError(err, 'invalid')) return err.message
    throw err
  }
  return 'accepted'
}

describe('normalizeRelayUrl', () => {
  it.each([
    ['ws://LOCALHOST:7447/', 'ws://localhost:7447'],
    ['wss://Hub.Example.com:443', 'wss://hub.example.com'],
    ['ws://h:80/', 'ws://h'],
    ['ws://h:7447/relay/', 'ws://h:7447/relay'],
    ['  ws://[::1]:7447 ', 'ws://[::1]:7447'],
  ])('%s -> %s', (input, out) => expect(normalizeRelayUrl(input)).toBe(out))

  it.each(['http://h', 'h:7447', 'ws://user:pw@h'])('refuses %s as bad-url', (input) => {
    expect(() => normalizeRelayUrl(input)).toThrow(
      expect.objectContaining({ code: 'bad-url' }) as Error,
    )
  })
})

describe('checkAuthEvent', () => {
  it('accepts a fresh event for this challenge and a matching (normalised) relay', () => {
    expect(refusal(signAuthEvent('ws://127.0.0.1:7447/', 'c1', sk, now))).toBe('accepted')
    expect(refusal(signAuthEvent('ws://127.0.0.1:7447', 'c1', sk, now + 299))).toBe('accepted')
  })
  it('refuses each kind of mismatch with its own message', () => {
    expect(refusal(signAuthEvent('ws://127.0.0.1:9999', 'c1', sk, now))).toMatch(/relay tag/)
    expect(refusal(signAuthEvent('not a url', 'c1', sk, now))).toMatch(/relay tag/)
    expect(refusal(signAuthEvent('ws://127.0.0.1:7447', 'c2', sk, now))).toMatch(/challenge/)
    expect(refusal(signAuthEvent('ws://127.0.0.1:7447', 'c1', sk, now - 301))).toMatch(/stale/)
    expect(refusal(signAuthEvent('ws://127.0.0.1:7447', 'c1', sk, now + 301))).toMatch(/stale/)
    const wrongKind = signEvent(
      { ...makeAuthTemplate('ws://127.0.0.1:7447', 'c1', now), kind: 1 },
      sk,
    )
    expect(refusal(wrongKind)).toMatch(/kind 22242/)
    const noRelay = signEvent(
      { kind: 22242, created_at: now, tags: [['challenge', 'c1']], content: '' },
      sk,
    )
    expect(refusal(noRelay)).toMatch(/missing/)
  })
})
