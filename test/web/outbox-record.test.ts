import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { signEvent } from '../../src/events/event.js'
import { done, outgoing, owes, readRecord, storedOf } from '../../src/web/app/lib/outbox-record.js'

// The web app's outbox record (issue 32): each hub's answer kept, the event kept until every hub
// the page links to answered for good and one took it, records of the version before per-hub
// answers read as they stand.

const event = signEvent({ kind: 9, created_at: 1, tags: [], content: 'hi' }, generateSecretKey())
const a = 'wss://a.example'
const b = 'wss://b.example'
const took = { outcome: 'delivered' as const, message: '' }
const refused = (message: string) => ({ outcome: 'refused' as const, message })

describe('the web app’s outbox record', () => {
  it('is sent as soon as one hub took it, and leaves only when every hub answered', () => {
    const fresh = outgoing(event, {})
    expect(fresh.state).toBe('queued')
    expect(owes(fresh, a) && owes(fresh, b)).toBe(true)
    const onA = outgoing(event, { [a]: took })
    expect(onA.state).toBe('sent')
    expect(owes(onA, a)).toBe(false)
    expect(owes(onA, b)).toBe(true)
    expect(done(onA, [a, b])).toBe(false)
    expect(done(outgoing(event, { [a]: took, [b]: refused('blocked: no') }), [a, b])).toBe(true)
  })

  it('a hub taken off the list is owed nothing', () => {
    expect(done(outgoing(event, { [a]: took }), [a])).toBe(true)
    // An answer from a hub no longer listed does not count for the ones that are.
    expect(done(outgoing(event, { [b]: took }), [a])).toBe(false)
  })

  it('refused by every hub it stays, shown with their words, until dismissed', () => {
    const o = outgoing(event, { [a]: refused('blocked: x'), [b]: refused('invalid: y') })
    expect(o.state).toBe('refused')
    expect(o.message).toBe('blocked: x; invalid: y')
    expect(done(o, [a, b])).toBe(false)
    // Refused by one while another is still owed it: shown refused, still sent to the other.
    const partly = outgoing(event, { [a]: refused('blocked: x') })
    expect(partly.state).toBe('refused')
    expect(owes(partly, b)).toBe(true)
  })

  it('round-trips through its stored shape', () => {
    const o = outgoing(event, { [a]: took })
    expect(readRecord(storedOf(o))).toEqual(o)
  })

  it('reads an older version’s queued record as owed to every hub', () => {
    const o = readRecord({ event, state: 'queued' })
    expect(o.state).toBe('queued')
    expect(owes(o, a) && owes(o, b)).toBe(true)
  })

  it('reads an older version’s refused record as refused, sent to no hub again', () => {
    const o = readRecord({ event, state: 'refused', message: 'blocked: no' })
    expect(o).toMatchObject({ state: 'refused', message: 'blocked: no' })
    expect(owes(o, a)).toBe(false)
    expect(done(o, [a])).toBe(false)
    expect(readRecord(storedOf(o))).toEqual(o)
  })
})
