import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import {
  publicKeyOf,
  signEvent,
  type EventTemplate,
  type NostrEvent,
} from '../../src/events/event.js'
import type { Filter } from '../../src/events/filter.js'
import { openDatabase, pageCacheKiB } from '../../src/store/db.js'
import { eventStoreMigrations } from '../../src/store/event-schema.js'
import { EventStore, inlineRawBytes } from '../../src/store/event-store.js'
import { hubMigrations } from '../../src/store/hub-schema.js'
import { tempDir } from '../helpers/tmp.js'

const sk = generateSecretKey()
const sk2 = generateSecretKey()
const limits = { defaultLimit: 500, maxLimit: 5000 }
const ev = (t: Partial<EventTemplate>, key = sk): NostrEvent =>
  signEvent({ kind: 9, created_at: 100, tags: [], content: 'x', ...t }, key)
const ids = (rows: { id: string }[]) => rows.map((r) => r.id)

function openStore(): EventStore {
  return new EventStore(join(tempDir(), 'events.db'))
}

describe('EventStore', () => {
  it('bounds a page after a cursor by the cursor alone, not by `until` as well', () => {
    // With both, sqlite may range the index from `until` down and skip every row before the
    // cursor on each page: reading a 200,000-event part of a 1M store in pages (NIP-77 sets,
    // REQ slices) took 11 s instead of 0.3 (issue 34's catch-up, 267 s at 1M).
    const store = openStore()
    store.insertBatch(
      Array.from({ length: 10 }, (_, i) => ev({ created_at: 100 + i, content: `m${i}` })),
    )
    const { db } = store
    const prepared: string[] = []
    const prepare = db.prepare.bind(db)
    db.prepare = (sql: string) => {
      prepared.push(sql)
      return prepare(sql)
    }
    const filter: Filter = { since: 101, until: 108 }
    const first = store.readKeys(filter, 3, [], undefined)
    expect(first.map((r) => r[1])).toEqual([108, 107, 106])
    const last = first.at(-1)!
    const next = store.readKeys(filter, 10, [], { created_at: last[1], id: last[2] })
    expect(next.map((r) => r[1])).toEqual([105, 104, 103, 102, 101])
    const paged = prepared.filter((sql) => sql.includes('id > ?'))
    expect(paged).toHaveLength(1)
    expect(paged[0]!.match(/created_at <= \?/g)).toHaveLength(1)
    store.close()
  })

  it('stores a batch, reports duplicates, and survives reopening', () => {
    const dir = tempDir()
    const path = join(dir, 'events.db')
    const a = ev({ content: 'a' })
    const b = ev({ content: 'b' })
    const store = new EventStore(path)
    expect(store.insertBatch([a, b, a])).toEqual(['stored', 'stored', 'duplicate'])
    expect(store.insertBatch([b])).toEqual(['duplicate'])
    store.close()
    const again = new EventStore(path)
    expect(again.count()).toBe(2)
    expect(again.query([{ ids: [a.id] }], limits).map((r) => JSON.parse(r.raw) as unknown)).toEqual(
      [a],
    )
    again.close()
  })

  it("keeps sqlite's page cache to pageCacheKiB, not better-sqlite3's 16 MB", () => {
    const store = new EventStore(join(tempDir(), 'events.db'), { migrations: hubMigrations })
    expect(store.db.pragma('cache_size', { simple: true })).toBe(-pageCacheKiB)
    expect(pageCacheKiB).toBeLessThan(16000)
    store.close()
  })

  it('returns newest first, ties by lowest id, capped by limit and maxLimit', () => {
    const store = openStore()
    const events = [1, 2, 3, 3, 4].map((t, i) => ev({ created_at: t, content: `m${i}` }))
    store.insertBatch(events)
    const rows = store.query([{}], limits)
    const expected = [...events].sort(
      (x, y) => y.created_at - x.created_at || (x.id < y.id ? -1 : 1),
    )
    expect(ids(rows)).toEqual(ids(expected))
    expect(ids(store.query([{ limit: 2 }], limits))).toEqual(ids(expected).slice(0, 2))
    expect(store.query([{ limit: 10 }], { defaultLimit: 1, maxLimit: 3 })).toHaveLength(3)
    expect(store.query([{}], { defaultLimit: 1, maxLimit: 3 })).toHaveLength(1)
    expect(store.query([{ limit: 0 }], limits)).toHaveLength(0)
    store.close()
  })

  it('answers every filter field, since: 0 included, and ORs filters', () => {
    const store = openStore()
    const a = ev({ created_at: 0, kind: 1, tags: [['h', 'ops']] })
    const b = ev({
      created_at: 10,
      kind: 9,
      tags: [
        ['h', 'dev'],
        ['p', 'a'.repeat(64)],
      ],
    })
    const c = ev({ created_at: 20, kind: 9, tags: [['h', 'ops']] }, sk2)
    store.insertBatch([a, b, c])
    const q = (...f: Parameters<EventStore['query']>[0]) => ids(store.query(f, limits)).sort()
    expect(q({ since: 0 })).toEqual(ids([a, b, c]).sort())
    expect(q({ until: 0 })).toEqual([a.id])
    expect(q({ since: 10, until: 10 })).toEqual([b.id])
    expect(q({ kinds: [9] })).toEqual(ids([b, c]).sort())
    expect(q({ authors: [c.pubkey] })).toEqual([c.id])
    expect(q({ tags: { h: ['ops'] } })).toEqual(ids([a, c]).sort())
    expect(q({ tags: { h: ['dev', 'ops'], p: ['a'.repeat(64)] } })).toEqual([b.id])
    expect(q({ tags: { h: ['ops'] }, kinds: [9] })).toEqual([c.id])
    expect(q({ ids: [] })).toEqual([])
    expect(q({ kinds: [1] }, { authors: [c.pubkey] })).toEqual(ids([a, c]).sort())
    expect(q({ kinds: [9] }, { kinds: [9] })).toEqual(ids([b, c]).sort())
    store.close()
  })

  it('keeps only the newest replaceable and addressable events', () => {
    const store = openStore()
    const old = ev({ kind: 0, created_at: 1, content: 'old' })
    const newer = ev({ kind: 0, created_at: 2, content: 'new' })
    expect(store.insertBatch([old, newer])).toEqual(['stored', 'stored'])
    expect(store.insertBatch([newer])).toEqual(['duplicate'])
    expect(store.insertBatch([old])).toEqual(['superseded'])
    const older = ev({ kind: 0, created_at: 0, content: 'older' })
    expect(store.insertBatch([older])).toEqual(['superseded'])
    expect(ids(store.query([{ kinds: [0] }], limits))).toEqual([newer.id])

    const d1 = ev({ kind: 30000, created_at: 5, tags: [['d', 'x']] })
    const d2 = ev({ kind: 30000, created_at: 6, tags: [['d', 'x']] })
    const other = ev({ kind: 30000, created_at: 1, tags: [['d', 'y']] })
    store.insertBatch([d1, other, d2])
    expect(ids(store.query([{ kinds: [30000] }], limits)).sort()).toEqual(ids([d2, other]).sort())
    // The replaced event's tags are gone too.
    expect(ids(store.query([{ tags: { d: ['x'] } }], limits))).toEqual([d2.id])

    // Same created_at: the lower id wins, whatever the arrival order.
    const t1 = ev({ kind: 10002, created_at: 9, content: '1' })
    const t2 = ev({ kind: 10002, created_at: 9, content: '2' })
    const [low, high] = t1.id < t2.id ? [t1, t2] : [t2, t1]
    store.insertBatch([high, low])
    expect(ids(store.query([{ kinds: [10002] }], limits))).toEqual([low.id])
    store.close()
  })

  it('keeps every version of a channel definition aside, serving only the newest', () => {
    const store = openStore()
    const v = (at: number, key = sk) =>
      ev({ kind: 34140, created_at: at, tags: [['d', 'ops']], content: `v${at}` }, key)
    const [v1, v2, v3, other] = [v(10), v(20), v(5), v(7, sk2)]
    expect(store.insertBatch([v1, v2, v3, other])).toEqual([
      'stored',
      'stored',
      'superseded',
      'stored',
    ])
    // Readers get the newest of each address, as NIP-01 says.
    expect(ids(store.query([{ kinds: [34140] }], limits)).sort()).toEqual(ids([v2, other]).sort())
    // The channel book gets the whole set, replaced and late-arriving versions included.
    expect(ids([...store.allVersionsOfKind(34140)])).toEqual(ids([v3, other, v1, v2]))
    expect(store.getEvent(v1.id)).toEqual(v1)
    expect(store.getEvent(v2.id)).toEqual(v2)
    expect(store.getEvent('f'.repeat(64))).toBeUndefined()
    // Other addressable kinds are replaced as before, with nothing kept.
    store.insertBatch([ev({ kind: 30000, created_at: 1, tags: [['d', 'x']] })])
    expect([...store.allVersionsOfKind(30000)]).toEqual([])
    store.close()
  })

  it.each([
    ['the tag index (a store without the kept table)', eventStoreMigrations],
    ['channel_firsts (hub.db)', hubMigrations],
  ])('answers the earliest event of each key in each channel, from %s', (_, migrations) => {
    const store = new EventStore(join(tempDir(), 'events.db'), { migrations })
    store.insertBatch([
      ev({ created_at: 30, tags: [['h', 'ops']] }),
      ev({ created_at: 20, tags: [['h', 'ops']] }),
      ev({ created_at: 25, tags: [['h', 'ops']] }, sk2),
      ev(
        {
          created_at: 40,
          tags: [
            ['h', 'dev'],
            ['h', 'ops'],
          ],
        },
        sk2,
      ),
      ev({ created_at: 1, tags: [['d', 'ops']], kind: 30000 }),
      ev({ created_at: 2, tags: [['e', 'a'.repeat(64)]] }),
    ])
    const rows = store
      .earliestInChannels()
      .sort((a, b) => (a.channel + a.pubkey < b.channel + b.pubkey ? -1 : 1))
    const [pk, pk2] = [ev({}).pubkey, ev({}, sk2).pubkey]
    expect(rows).toEqual(
      [
        { channel: 'dev', pubkey: pk2, createdAt: 40 },
        { channel: 'ops', pubkey: pk, createdAt: 20 },
        { channel: 'ops', pubkey: pk2, createdAt: 25 },
      ].sort((a, b) => (a.channel + a.pubkey < b.channel + b.pubkey ? -1 : 1)),
    )
    store.close()
  })

  it('keeps the channel definitions a store held before it kept versions', () => {
    const path = join(tempDir(), 'old.db')
    const def = ev({ kind: 34140, created_at: 3, tags: [['d', 'ops']] })
    const old = openDatabase(path, eventStoreMigrations.slice(0, 1))
    old
      .prepare(
        'INSERT INTO events (id, pubkey, kind, created_at, rkey, raw) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run(
        def.id,
        def.pubkey,
        def.kind,
        def.created_at,
        `34140:${def.pubkey}:ops`,
        JSON.stringify(def),
      )
    old.close()
    const store = new EventStore(path)
    expect([...store.allVersionsOfKind(34140)]).toEqual([def])
    // Taken as admitted by the rules of their time; what comes later is not legacy.
    expect(store.legacyVersionIds(34140)).toEqual([def.id])
    store.insertBatch([ev({ kind: 34140, created_at: 4, tags: [['d', 'ops']] })])
    expect(store.legacyVersionIds(34140)).toEqual([def.id])
    store.close()
  })

  it('replaces an event by another form of it (same id), re-indexing its tags by the one rule', () => {
    const store = new EventStore(join(tempDir(), 'events.db'), {
      migrations: hubMigrations,
      usage: { exempt: new Set() },
    })
    const sealed = ev({
      tags: [
        ['h', 'ops'],
        ['t', 'sealed'],
      ],
      content: 'ciphertext',
    })
    const other = ev({ tags: [['t', 'sealed']], content: 'other' })
    store.insertBatch([sealed, other])
    const before = { ...store.usageOf(sealed.pubkey) }
    // The opened form: new tags, one of them repeated, one too long to index.
    const opened: NostrEvent = {
      ...sealed,
      content: 'the opened text',
      tags: [
        ['h', 'ops'],
        ['t', 'opened'],
        ['t', 'opened'],
        ['p', publicKeyOf(sk2)],
        ['t', 'x'.repeat(1025)],
      ],
    }
    expect(store.replaceRaw(opened)).toBe(true)
    // A tag query finds the new tags, not the old, and the event once.
    expect(ids(store.query([{ tags: { t: ['sealed'] } }], limits))).toEqual([other.id])
    expect(ids(store.query([{ tags: { t: ['opened'] } }], limits))).toEqual([sealed.id])
    expect(ids(store.query([{ tags: { p: [publicKeyOf(sk2)] } }], limits))).toEqual([sealed.id])
    expect(JSON.parse(store.query([{ ids: [sealed.id] }], limits)[0]!.raw)).toEqual(opened)
    // One row per (name, value); a value past the index's limit has none.
    const rows = store.db
      .prepare(
        'SELECT name, value FROM tags WHERE seq = (SELECT seq FROM events WHERE id = ?) ORDER BY name, value',
      )
      .all(sealed.id)
    expect(rows).toEqual([
      { name: 'h', value: 'ops' },
      { name: 'p', value: publicKeyOf(sk2) },
      { name: 't', value: 'opened' },
    ])
    // Its key's stored bytes follow the new JSON.
    expect(store.usageOf(sealed.pubkey)).toEqual({
      events: before.events,
      bytes:
        before.bytes -
        Buffer.byteLength(JSON.stringify(sealed)) +
        Buffer.byteLength(JSON.stringify(opened)),
    })
    // An id it does not hold: nothing is written.
    expect(store.replaceRaw(ev({ content: 'never stored' }))).toBe(false)
    expect(store.count()).toBe(2)
    store.close()
  })

  it('rolls a failed batch back whole', () => {
    const store = openStore()
    const a = ev({ content: 'a' })
    const broken = { ...ev({ content: 'b' }), tags: null } as unknown as NostrEvent
    expect(() => store.insertBatch([a, broken])).toThrow()
    expect(store.count()).toBe(0)
    store.close()
  })
})

describe("EventStore with the hub's ordered indexes (orderedIndexesMigration)", () => {
  // The same events in a store without the migration (plain IN subqueries, a sort per query) and
  // in a hub store with it (tag join, covering indexes): every query must answer the same.
  function pair() {
    const plain = new EventStore(join(tempDir(), 'plain.db'))
    const hub = new EventStore(join(tempDir(), 'hub.db'), { migrations: hubMigrations })
    const events: NostrEvent[] = []
    for (let i = 0; i < 120; i++) {
      events.push(
        ev(
          {
            kind: i % 3 === 0 ? 7 : 9,
            // Many ties of created_at, so the order by id is exercised.
            created_at: 1000 + Math.floor(i / 4),
            tags: [
              ['h', `c${i % 3}`],
              ['t', `t${i % 5}`],
              // A repeated tag must not return the event twice.
              ...(i % 7 === 0 ? [['h', `c${i % 3}`]] : []),
            ],
            content: `${i}`,
          },
          i % 2 === 0 ? sk : sk2,
        ),
      )
    }
    plain.insertBatch(events)
    hub.insertBatch(events)
    return { plain, hub }
  }

  const filters: Filter[] = [
    { tags: { h: ['c1'] }, limit: 10 },
    { tags: { h: ['c0'] }, since: 1005, until: 1020, limit: 100 },
    { tags: { h: ['c2'], t: ['t1', 't3'] }, limit: 50 },
    { tags: { h: ['c0', 'c1'] }, limit: 30 },
    { tags: { h: ['c1'] }, kinds: [7], limit: 100 },
    { since: 1003, until: 1011, limit: 25 },
    { kinds: [9], limit: 40 },
    { authors: [publicKeyOf(sk2)], limit: 15 },
  ]

  it('answers every filter as the plain schema does, each event once', () => {
    const { plain, hub } = pair()
    for (const f of filters) {
      const want = ids(plain.query([f], limits))
      const got = ids(hub.query([f], limits))
      expect({ f, got }).toEqual({ f, got: want })
      expect(new Set(got).size).toBe(got.length)
    }
  })

  it('pages a tag query by cursor in NIP-01 order, hiding what it must', () => {
    const { plain, hub } = pair()
    const hide = [{ tag: 't', values: ['t2'] }]
    for (const store of [plain, hub]) {
      const pages: string[] = []
      let after: { created_at: number; id: string } | undefined
      for (let n = 0; n < 100; n++) {
        const page = [...store.openCursor({ tags: { h: ['c1'] } }, 7, hide, after)]
        if (page.length === 0) break
        pages.push(...page.map((r) => r.id))
        after = page[page.length - 1]
      }
      expect(pages).toEqual(ids(plain.query([{ tags: { h: ['c1'] } }], limits, hide)))
    }
  })

  it('reads pages with their JSON when sqlite walks them in order, keys only when it sorts', () => {
    const { plain, hub } = pair()
    const hide = [{ tag: 't', values: ['t2'] }]
    const withJson = new Set<string>()
    for (const [name, store] of [
      ['plain', plain],
      ['hub', hub],
    ] as const) {
      for (const f of filters) {
        const keys = [...store.openCursor(f, f.limit ?? 500, hide, undefined)]
        const rows = store.readPage(f, f.limit ?? 500, hide, undefined)
        expect(rows.map((r) => r[2])).toEqual(ids(keys))
        for (const [seq, , , raw] of rows) if (raw !== null) expect(raw).toBe(store.rawOf(seq))
        if (rows.length > 0 && rows.every((r) => r[3] !== null))
          withJson.add(`${name} ${JSON.stringify(f)}`)
        if (rows.some((r) => r[3] === null)) expect(rows.every((r) => r[3] === null)).toBe(true)
      }
    }
    // The ordered indexes read a time window and a one-value tag in order: JSON comes along.
    expect(withJson).toContain(`hub ${JSON.stringify({ since: 1003, until: 1011, limit: 25 })}`)
    expect(withJson).toContain(`hub ${JSON.stringify({ tags: { h: ['c1'] }, limit: 10 })}`)
    // Two tag values are collected and sorted: keys only, the JSON read row by row.
    expect(withJson).not.toContain(
      `hub ${JSON.stringify({ tags: { h: ['c0', 'c1'] }, limit: 30 })}`,
    )
    // A few ids are sorted too, but they are few: their JSON comes with them, in order.
    const some = ids(hub.query([{ tags: { h: ['c1'] } }], limits)).slice(0, 4)
    const page = hub.readPage({ ids: [...some].reverse() }, 10, hide, undefined)
    expect(page.map((r) => r[2])).toEqual(ids(hub.query([{ ids: some }], limits, hide)))
    expect(page.length).toBeGreaterThan(0)
    for (const [seq, , , raw] of page) expect(raw).toBe(hub.rawOf(seq))
  })

  it('leaves a large event out of a page, to be read apart, and resumes after a page', () => {
    const { hub } = pair()
    const big = ev({ created_at: 5000, content: 'x'.repeat(inlineRawBytes) })
    hub.insertBatch([big])
    const [first, ...rest] = hub.readPage({}, 3, [], undefined)
    expect(first?.[2]).toBe(big.id)
    expect(first?.[3]).toBeNull()
    expect(hub.rawOf(first![0])).toBe(JSON.stringify(big))
    expect(rest.every((r) => typeof r[3] === 'string')).toBe(true)
    // The next page starts right after the last row of this one.
    const last = rest[rest.length - 1]!
    const next = hub.readPage({}, 2, [], { created_at: last[1], id: last[2] })
    const all = hub.readPage({}, 5, [], undefined)
    expect([...[first!, ...rest], ...next].map((r) => r[2])).toEqual(all.map((r) => r[2]))
  })

  it('upgrades an older hub.db: ordered indexes, repeated tag rows removed, tag index covers', () => {
    const path = join(tempDir(), 'hub.db')
    // Before the ordered indexes and the covering tag index (and the usage recount and
    // channel_firsts after them).
    const upgrades: [number, number][] = []
    const onUpgrade = (from: number, to: number) => upgrades.push([from, to])
    const old = new EventStore(path, { migrations: hubMigrations.slice(0, -4), onUpgrade })
    // A new file is made, not upgraded.
    expect(upgrades).toEqual([])
    const e = ev({
      tags: [
        ['h', 'x'],
        ['h', 'x'],
      ],
    })
    old.insertBatch([e])
    // An older kith stored one row per tag, repeats included.
    old.db.prepare('INSERT INTO tags SELECT * FROM tags').run()
    expect(old.db.prepare('SELECT count(*) AS n FROM tags').get()).toEqual({ n: 2 })
    old.close()
    const upgraded = new EventStore(path, { migrations: hubMigrations, onUpgrade })
    // channel_firsts is filled from what the file already held.
    expect(upgraded.earliestInChannels()).toEqual([
      { channel: 'x', pubkey: e.pubkey, createdAt: e.created_at },
    ])
    expect(upgrades).toEqual([[hubMigrations.length - 4, hubMigrations.length]])
    expect(upgraded.db.prepare('SELECT count(*) AS n FROM tags').get()).toEqual({ n: 1 })
    expect(ids(upgraded.query([{ tags: { h: ['x'] } }], limits))).toEqual([e.id])
    const plan = upgraded.db
      .prepare(
        'EXPLAIN QUERY PLAN SELECT seq, created_at, id FROM events WHERE created_at >= 0 ORDER BY created_at DESC, id ASC LIMIT 5',
      )
      .all() as { detail: string }[]
    expect(plan.map((p) => p.detail).join(' ')).not.toMatch(/TEMP B-TREE/)
    // A tag join walks the tag index newest first (sorting only ties of created_at by id), and a
    // hidden channel reads the tag index alone.
    const tagPlan = upgraded.db
      .prepare(
        "EXPLAIN QUERY PLAN SELECT e.seq FROM tags t JOIN events e ON e.seq = t.seq WHERE t.name = 'h' AND t.value = 'x' AND NOT e.seq IN (SELECT seq FROM tags WHERE name = 'h' AND value IN ('y')) ORDER BY t.created_at DESC, e.id LIMIT 5",
      )
      .all() as { detail: string }[]
    const details = tagPlan.map((p) => p.detail)
    expect(details).toContain('SEARCH t USING COVERING INDEX tags_lookup (name=? AND value=?)')
    expect(details).toContain('SEARCH tags USING COVERING INDEX tags_lookup (name=? AND value=?)')
    expect(details).not.toContain('USE TEMP B-TREE FOR ORDER BY')
    // Ties of created_at, stored after the upgrade, come in id order with the one from before,
    // in one page or resumed page by page.
    const ties = [1, 2, 3, 4, 5].map((i) => ev({ tags: [['h', 'x']], content: `tie ${i}` }))
    upgraded.insertBatch(ties)
    const want = [e, ...ties].map((x) => x.id).sort()
    expect(ids(upgraded.query([{ tags: { h: ['x'] } }], limits))).toEqual(want)
    const paged: string[] = []
    let after: { created_at: number; id: string } | undefined
    // Bounded: a cursor that does not move on must fail the test, not hang it.
    for (let n = 0; n < 10; n++) {
      const page = upgraded.readPage({ tags: { h: ['x'] } }, 2, [], after)
      if (page.length === 0) break
      paged.push(...page.map((r) => r[2]))
      const last = page[page.length - 1]!
      after = { created_at: last[1], id: last[2] }
    }
    expect(paged).toEqual(want)
    upgraded.close()
  })
})
