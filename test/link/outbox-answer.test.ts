import { describe, expect, it } from 'vitest'
import { KithError } from '../../src/errors.js'
import {
  outboxContinues,
  outboxFailure,
  outboxOutcome,
  outboxRetryBackoff,
  outboxRetryDelayMs,
  type OutboxOutcome,
} from '../../src/link/outbox-answer.js'

// What a hub's answer means to a kept event, for the node's outbox and the browser's alike
// (link/outbox-answer.ts): every NIP-01 prefix, with OK true and OK false.

const table: [ok: boolean, message: string, outcome: OutboxOutcome][] = [
  [true, '', 'delivered'],
  [true, 'duplicate: already have this event', 'delivered'],
  [true, 'duplicate: a newer version of this event is stored', 'delivered'],
  [false, 'duplicate: already have this event', 'delivered'],
  [false, 'rate-limited: more than 64 events awaiting verification on this connection', 'retry'],
  [false, 'rate-limited: person: more than 100 events/s from this person', 'retry'],
  [false, 'rate-limited: hub: more than 1000 events/s on this hub from everyone', 'retry'],
  // A full storage quota is not "not now": only the hub's operator raises it.
  [false, 'rate-limited: quota: this person stores 1000000 events, their quota', 'refused'],
  [false, 'error: could not verify the event; try again', 'retry'],
  [false, 'auth-required: authenticate (NIP-42) as a fleet member first', 'retry'],
  [false, 'restricted: revoked: this key was revoked', 'revoked'],
  [false, 'restricted: revoked', 'revoked'],
  [false, 'restricted: not-member: no grant for this key', 'refused'],
  // "revokedness" is not "revoked": the word, not a prefix of another.
  [false, 'restricted: revokedness', 'refused'],
  [false, 'invalid: bad signature', 'refused'],
  [false, 'blocked: not on this hub', 'refused'],
  [false, 'pow: difficulty 20 is less than 28', 'refused'],
  [false, 'mute: no one is listening', 'refused'],
  [false, 'not sent: #ops has no definition in effect here', 'refused'],
  [false, 'no prefix at all', 'refused'],
  [false, '', 'refused'],
]

describe('outbox answers', () => {
  it.each(table)('OK %s "%s" is %s', (ok, message, outcome) => {
    expect(outboxOutcome({ ok, message })).toEqual({ outcome, message })
  })

  it('no answer (the link dropped, or timed out) is retried, with why', () => {
    const closed = new KithError('io', 'wss://h closed the connection (1006)', { reason: 'closed' })
    expect(outboxFailure(closed)).toEqual({
      outcome: 'retry',
      message: 'wss://h closed the connection (1006)',
    })
    expect(outboxFailure('gone')).toEqual({ outcome: 'retry', message: 'gone' })
  })

  it('the rest of the outbox goes on after delivered and refused, and waits after the others', () => {
    const goesOn = (outcome: OutboxOutcome) => outboxContinues({ outcome, message: '' })
    expect(goesOn('delivered')).toBe(true)
    expect(goesOn('refused')).toBe(true)
    expect(goesOn('retry')).toBe(false)
    expect(goesOn('revoked')).toBe(false)
  })

  it('retries back off from a second to a minute, jittered down to half', () => {
    expect(outboxRetryBackoff).toEqual({ firstMs: 1000, maxMs: 60_000, jitter: [0.5, 1] })
    expect([0, 1, 2, 5, 6, 30].map((a) => outboxRetryDelayMs(a, () => 0.999999))).toEqual([
      1000, 2000, 4000, 32_000, 60_000, 60_000,
    ])
    expect(outboxRetryDelayMs(3, () => 0)).toBe(4000)
  })
})
