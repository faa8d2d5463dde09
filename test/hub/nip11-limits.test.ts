import { describe, expect, it } from 'vitest'
import type { RawClient } from '../helpers/raw-client.js'
import { startTestHub } from '../helpers/hub.js'

/**
 * NIP-11 publishes the filter limits the hub enforces: a client reads them, and a REQ at each
 * published bound is served while one past it is refused. The hub runs with small limits so
 * that the test reads what it is told rather than the defaults.
 */
interface Info {
  limitation: Record<string, number>
  kith: Record<string, number>
}

async function info(url: string): Promise<Info> {
  const res = await fetch(url.replace('ws://', 'http://'), {
    headers: { accept: 'application/nostr+json' },
  })
  return (await res.json()) as Info
}

/** The REQ's end: EOSE when served, CLOSED with the refusal otherwise. */
async function reqEnd(c: RawClient, subId: string, ...filters: unknown[]) {
  const { end } = await c.req(subId, ...filters)
  c.send(['CLOSE', subId])
  return end
}

const hex = (i: number) => i.toString(16).padStart(64, '0')

describe('NIP-11 limits', () => {
  it('publishes the filter limits it enforces: one past each is refused', async () => {
    const t = await startTestHub({
      limits: {
        maxFilters: 3,
        maxFilterValues: 4,
        maxFilterTagConditions: 2,
        maxFilterTagValueLength: 16,
        maxSubscriptions: 2,
        maxSubIdLength: 8,
        maxLimit: 3,
        defaultLimit: 2,
      },
    })
    const { limitation, kith } = await info(t.url)
    const c = await t.member()

    const maxFilters = limitation.max_filters!
    expect(maxFilters).toBe(3)
    const filters = (n: number) => Array.from({ length: n }, (_, i) => ({ kinds: [i] }))
    expect((await reqEnd(c, 'f', ...filters(maxFilters)))[0]).toBe('EOSE')
    expect(await reqEnd(c, 'f', ...filters(maxFilters + 1))).toEqual([
      'CLOSED',
      'f',
      `invalid: REQ takes 1-${maxFilters} filters`,
    ])

    const maxValues = kith.max_filter_values!
    expect(maxValues).toBe(4)
    const ids = (n: number) => ({ ids: Array.from({ length: n }, (_, i) => hex(i)) })
    expect((await reqEnd(c, 'v', ids(maxValues)))[0]).toBe('EOSE')
    expect(await reqEnd(c, 'v', ids(maxValues + 1))).toEqual([
      'CLOSED',
      'v',
      `invalid: filter too wide: ids has ${maxValues + 1} values (max ${maxValues})`,
    ])

    const maxConditions = kith.max_filter_tag_conditions!
    expect(maxConditions).toBe(2)
    const conditions = (n: number) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`#${'abcdefgh'[i]}`, ['x']]))
    expect((await reqEnd(c, 't', conditions(maxConditions)))[0]).toBe('EOSE')
    expect(await reqEnd(c, 't', conditions(maxConditions + 1))).toEqual([
      'CLOSED',
      't',
      `invalid: filter too wide: more than ${maxConditions} tag conditions`,
    ])

    const maxValueLength = kith.max_filter_tag_value_length!
    expect(maxValueLength).toBe(16)
    const valued = (n: number) => ({ '#p': ['x'.repeat(n)] })
    expect((await reqEnd(c, 'l', valued(maxValueLength)))[0]).toBe('EOSE')
    expect(await reqEnd(c, 'l', valued(maxValueLength + 1))).toEqual([
      'CLOSED',
      'l',
      `invalid: filter #p must hold strings (max ${maxValueLength} chars)`,
    ])

    const maxSubId = limitation.max_subid_length!
    expect(maxSubId).toBe(8)
    expect((await reqEnd(c, 'x'.repeat(maxSubId), { kinds: [1] }))[0]).toBe('EOSE')
    c.send(['REQ', 'x'.repeat(maxSubId + 1), { kinds: [1] }])
    expect(await c.next((f) => f[0] === 'NOTICE')).toEqual([
      'NOTICE',
      `invalid: REQ needs a subscription id of 1-${maxSubId} characters`,
    ])

    const maxSubs = limitation.max_subscriptions!
    expect(maxSubs).toBe(2)
    for (let i = 0; i < maxSubs; i++) {
      expect((await c.req(`open${i}`, { kinds: [1] })).end[0]).toBe('EOSE')
    }
    expect((await c.req('over', { kinds: [1] })).end).toEqual([
      'CLOSED',
      'over',
      `error: too many subscriptions on this connection (max ${maxSubs})`,
    ])
    for (let i = 0; i < maxSubs; i++) c.send(['CLOSE', `open${i}`])

    // max_limit caps a filter's limit; default_limit is a filter's limit when it names none.
    const maxLimit = limitation.max_limit!
    const defaultLimit = limitation.default_limit!
    expect([maxLimit, defaultLimit]).toEqual([3, 2])
    for (let i = 0; i < maxLimit + 2; i++) {
      const e = t.sign({ content: `stored ${i}` })
      c.send(['EVENT', e])
      expect((await c.ok(e.id))[2]).toBe(true)
    }
    expect((await c.req('cap', { kinds: [9], limit: maxLimit + 1 })).events).toHaveLength(maxLimit)
    expect((await c.req('dflt', { kinds: [9] })).events).toHaveLength(defaultLimit)
  })
})
