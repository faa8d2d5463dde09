import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { isKithError } from '../../src/errors.js'
import { signEvent } from '../../src/events/event.js'
import { matchFilter, matchFilters, parseFilter, toWireFilter } from '../../src/events/filter.js'

const sk = generateSecretKey()
const e = signEvent(
  {
    kind: 9,
    created_at: 100,
    tags: [
      ['h', 'ops'],
      ['p', 'a'.repeat(64)],
      ['e', 'b'.repeat(64), 'wss://x'],
    ],
    content: 'x',
  },
  sk,
)

function refusal(value: unknown): string {
  try {
    parseFilter(value)
  } catch (err) {
    if (isKithError(err, 'invalid')) return err.message
    throw err
  }
  throw new Error('accepted')
}

describe('matchFilter', () => {
  it('matches on every field', () => {
    expect(matchFilter({}, e)).toBe(true)
    expect(matchFilter({ ids: [e.id] }, e)).toBe(true)
    expect(matchFilter({ ids: ['0'.repeat(64)] }, e)).toBe(false)
    expect(matchFilter({ authors: [e.pubkey] }, e)).toBe(true)
    expect(matchFilter({ authors: ['0'.repeat(64)] }, e)).toBe(false)
    expect(matchFilter({ kinds: [1, 9] }, e)).toBe(true)
    expect(matchFilter({ kinds: [1] }, e)).toBe(false)
    expect(matchFilter({ since: 100, until: 100 }, e)).toBe(true)
    expect(matchFilter({ since: 101 }, e)).toBe(false)
    expect(matchFilter({ until: 99 }, e)).toBe(false)
    expect(matchFilter({ tags: { h: ['ops', 'dev'] } }, e)).toBe(true)
    expect(matchFilter({ tags: { h: ['dev'] } }, e)).toBe(false)
    expect(matchFilter({ tags: { h: ['ops'], p: ['a'.repeat(64)] } }, e)).toBe(true)
    expect(matchFilter({ tags: { h: ['ops'], p: ['c'.repeat(64)] } }, e)).toBe(false)
    expect(matchFilter({ tags: { e: ['b'.repeat(64)] } }, e)).toBe(true)
  })

  it('treats since: 0 and until: 0 as real bounds', () => {
    expect(matchFilter({ since: 0 }, e)).toBe(true)
    expect(matchFilter({ until: 0 }, e)).toBe(false)
    const zero = signEvent({ kind: 1, created_at: 0, tags: [], content: '' }, sk)
    expect(matchFilter({ until: 0 }, zero)).toBe(true)
    expect(matchFilter({ since: 1 }, zero)).toBe(false)
  })

  it('matches nothing with an empty list', () => {
    expect(matchFilter({ ids: [] }, e)).toBe(false)
    expect(matchFilter({ kinds: [] }, e)).toBe(false)
    expect(matchFilter({ tags: { h: [] } }, e)).toBe(false)
  })

  it('ORs filters together', () => {
    expect(matchFilters([{ kinds: [1] }, { kinds: [9] }], e)).toBe(true)
    expect(matchFilters([{ kinds: [1] }, { kinds: [2] }], e)).toBe(false)
  })
})

describe('parseFilter', () => {
  it('parses the wire form and round-trips it', () => {
    const wire = { ids: [e.id], kinds: [9], since: 0, until: 5, limit: 10, '#h': ['ops'] }
    const f = parseFilter(wire)
    expect(f).toEqual({
      ids: [e.id],
      kinds: [9],
      since: 0,
      until: 5,
      limit: 10,
      tags: { h: ['ops'] },
    })
    expect(toWireFilter(f)).toEqual(wire)
  })

  it('refuses each malformed field with a message naming it', () => {
    expect(refusal('x')).toMatch(/object/)
    expect(refusal({ ids: 'x' })).toMatch(/ids must be an array/)
    expect(refusal({ ids: ['ABC'] })).toMatch(/ids must hold/)
    expect(refusal({ authors: ['a'.repeat(63)] })).toMatch(/authors/)
    expect(refusal({ kinds: [1.5] })).toMatch(/kinds/)
    expect(refusal({ since: -1 })).toMatch(/since/)
    expect(refusal({ limit: 'ten' })).toMatch(/limit/)
    expect(refusal({ search: 'x' })).toMatch(/unknown filter field "search"/)
    expect(refusal({ '#hh': ['x'] })).toMatch(/unknown filter field/)
    expect(refusal({ '#h': [5] })).toMatch(/#h must hold/)
  })

  it('refuses over-wide filters', () => {
    expect(refusal({ authors: Array.from({ length: 1001 }, () => 'a'.repeat(64)) })).toMatch(
      /filter too wide: authors has 1001 values/,
    )
    const nine = Object.fromEntries('abcdefghi'.split('').map((c) => [`#${c}`, ['x']]))
    expect(refusal(nine)).toMatch(/filter too wide: more than 8 tag conditions/)
  })
})
