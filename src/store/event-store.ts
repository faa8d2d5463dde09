import type { Statement } from 'better-sqlite3'
import { compareNewestFirst, replaceKey, type NostrEvent } from '../events/event.js'
import type { Filter } from '../events/filter.js'
import { Kind } from '../events/kinds.js'
import { openDatabase, type Db, type Migration, type OpenOptions } from './db.js'
import { channelFirstsTable, eventStoreMigrations, orderedIndexName } from './event-schema.js'
import { WalSync } from './wal-sync.js'

/** What happened to one event of a batch. */
export type StoreOutcome = 'stored' | 'duplicate' | 'superseded'

/** A stored match: the canonical JSON plus the fields needed to merge and sort results. */
export interface StoredRow {
  id: string
  created_at: number
  raw: string
  /** Insertion order in this store (arrival order at a node). */
  seq: number
}

interface ExistingRow {
  seq: number
  id: string
  created_at: number
  bytes: number
}

/** What one key has stored: events and their canonical JSON's UTF-8 bytes. */
export interface Usage {
  events: number
  bytes: number
}

/** One committed batch: each event's outcome, and how it changed each key's usage. */
export interface WrittenBatch {
  outcomes: StoreOutcome[]
  /** [pubkey, events, bytes] added (negative when a replaced version was larger). */
  usage: [string, number, number][]
}

/** A stored match without its JSON: what paged queries sort and resume by. */
export interface StoredKey {
  id: string
  created_at: number
  seq: number
}

/** A row of `readPage`: its JSON is null when it must be read apart (`rawOf`). */
export type PageRow = [seq: number, created_at: number, id: string, raw: string | null]
/** A row's keys: what a reconciliation's set holds of it. */
export type KeyRow = [seq: number, created_at: number, id: string]

/** Rows whose JSON is larger are left out of a page and read one at a time as they are sent. */
export const inlineRawBytes = 4096

/** The select expression of a page's JSON column (`buildQuery` qualifies `raw` in a join). */
const inlineRaw = `CASE WHEN octet_length(raw) <= ${inlineRawBytes} THEN raw END`

/** Where a paged query resumes: after this row in NIP-01 order (newest first, then lower id). */
export interface QueryCursor {
  created_at: number
  id: string
}

const maxTagValueIndexed = 1024

/**
 * Whether a tag is a row of the tag index: a single-letter name with a value up to
 * `maxTagValueIndexed` (an event's repeats of one (name, value) make one row).
 */
export function isIndexedTag(tag: readonly string[]): boolean {
  return tag[0]?.length === 1 && tag[1] !== undefined && tag[1].length <= maxTagValueIndexed
}

/**
 * Addressable kinds whose every version is also kept in `kept_versions` (see event-schema.ts):
 * channel definitions, fleet settings and agent policies, whose meaning depends on the whole set of them (an
 * admin's later "off" that does not count must not erase their "on" that does).
 */
const keptVersionKinds: ReadonlySet<number> = new Set([
  Kind.ChannelDefinition,
  Kind.FleetSetting,
  // Every agent policy: a card is judged (and audited) by the version in force at its date.
  Kind.AgentPolicy,
])

/** The earliest stored event of one key in one channel (`h` value). */
export interface ChannelFirst {
  channel: string
  pubkey: string
  createdAt: number
}

/**
 * Events a query must leave out whatever the filters say: those with a `tag` whose value is one
 * of `values` (only of `kind`, when given). The hub hides private channels this way, inside the
 * query, so `limit` still counts what the reader may see.
 */
export interface HideRule {
  kind?: number
  tag: string
  values: readonly string[]
}

export interface EventStoreOptions extends OpenOptions {
  migrations?: readonly Migration[]
  /**
   * Keep a per-key count of stored events and bytes in the `key_usage` table (the hub's
   * migrations create it), leaving out these kinds. The hub's storage quota reads it.
   */
  usage?: { exempt: ReadonlySet<number> }
}

/** The sqlite event store of a hub: batch inserts in one transaction, NIP-01 queries. */
export class EventStore {
  readonly db: Db
  /** Set with `syncApart`: commits become durable through it (see `afterCommit`). */
  private readonly walSync: WalSync | undefined
  private readonly insertEvent: Statement<[string, string, number, number, string | null, string]>
  private readonly insertTag: Statement<[number | bigint, string, string, number]>
  private readonly findByRkey: Statement<[string], ExistingRow>
  private readonly hasId: Statement<[string], { one: number }>
  private readonly rowById: Statement<[string], { seq: number; bytes: number }>
  private readonly setRaw: Statement<[string, number]>
  private readonly deleteEvent: Statement<[number]>
  private readonly deleteTags: Statement<[number]>
  private readonly keepVersion: Statement<[string, number, number, string]>
  private readonly queries = new Map<string, Statement<unknown[], StoredRow>>()
  /** `readPage`'s statements, in raw mode (rows as arrays), by SQL. */
  private readonly pages = new Map<string, Statement<unknown[], PageRow>>()
  /** Per query shape (its SQL): whether sqlite sorts the whole match (`sortsAll`). */
  private readonly sortPlans = new Map<string, boolean>()
  private readonly rawBySeq: Statement<[number], string>
  private readonly insertBatchTx: (
    events: readonly NostrEvent[],
    raws: readonly string[] | undefined,
  ) => StoreOutcome[]
  private readonly usageExempt: ReadonlySet<number> | undefined
  private readonly usage = new Map<string, Usage>()
  /** Usage changes of the batch being written; applied to `usage` once it commits. */
  private batchUsage = new Map<string, Usage>()
  private readonly addUsage: Statement<[string, number, number]> | undefined
  /**
   * The schema has the ordered indexes and one tag row per (event, name, value)
   * (`orderedIndexesMigration`): a one-value tag filter then walks the tag index by join, newest
   * first, instead of collecting every tagged event and sorting them.
   */
  private readonly tagJoin: boolean
  /** Set when the schema keeps `channel_firsts` (hub.db, node.db): each stored `h` tag updates it. */
  private readonly noteFirst: Statement<[string, string, number]> | undefined
  private byId:
    { current: Statement<[string], string>; kept: Statement<[string], string> } | undefined

  /**
   * Opens `path`, or wraps an already open database whose schema includes the event tables
   * (node.db adds its own tables after them).
   */
  constructor(pathOrDb: string | Db, opts: EventStoreOptions = {}) {
    // Syncing apart needs a file and a promise of durability; then sqlite is told not to fsync.
    const apart =
      typeof pathOrDb === 'string' &&
      pathOrDb !== ':memory:' &&
      pathOrDb !== '' &&
      opts.syncApart === true &&
      (opts.synchronous ?? 'full') === 'full'
    this.db =
      typeof pathOrDb === 'string'
        ? openDatabase(pathOrDb, opts.migrations ?? eventStoreMigrations, {
            ...opts,
            syncApart: apart,
          })
        : pathOrDb
    this.walSync = apart ? new WalSync(`${pathOrDb}-wal`) : undefined
    this.insertEvent = this.db.prepare(
      'INSERT OR IGNORE INTO events (id, pubkey, kind, created_at, rkey, raw) VALUES (?, ?, ?, ?, ?, ?)',
    )
    this.insertTag = this.db.prepare(
      'INSERT INTO tags (seq, name, value, created_at) VALUES (?, ?, ?, ?)',
    )
    this.findByRkey = this.db.prepare(
      'SELECT seq, id, created_at, length(CAST(raw AS BLOB)) AS bytes FROM events WHERE rkey = ?',
    )
    this.hasId = this.db.prepare('SELECT 1 AS one FROM events WHERE id = ?')
    this.rowById = this.db.prepare(
      'SELECT seq, length(CAST(raw AS BLOB)) AS bytes FROM events WHERE id = ?',
    )
    this.setRaw = this.db.prepare('UPDATE events SET raw = ? WHERE seq = ?')
    this.rawBySeq = this.db
      .prepare<[number], string>('SELECT raw FROM events WHERE seq = ?')
      .pluck()
    this.deleteEvent = this.db.prepare('DELETE FROM events WHERE seq = ?')
    this.deleteTags = this.db.prepare('DELETE FROM tags WHERE seq = ?')
    this.usageExempt = opts.usage?.exempt
    if (this.usageExempt !== undefined) {
      this.addUsage = this.db.prepare(
        `INSERT INTO key_usage (pubkey, events, bytes) VALUES (?, ?, ?)
         ON CONFLICT(pubkey) DO UPDATE SET events = events + excluded.events,
           bytes = bytes + excluded.bytes`,
      )
      const rows = this.db
        .prepare<[], Usage & { pubkey: string }>('SELECT pubkey, events, bytes FROM key_usage')
        .all()
      for (const r of rows) this.usage.set(r.pubkey, { events: r.events, bytes: r.bytes })
    }
    const inSchema = (type: 'index' | 'table', name: string) =>
      this.db
        .prepare('SELECT 1 AS one FROM sqlite_master WHERE type = ? AND name = ?')
        .get(type, name) !== undefined
    this.tagJoin = inSchema('index', orderedIndexName)
    // The WHERE leaves the row (and its page) unwritten unless the event is earlier.
    this.noteFirst = inSchema('table', channelFirstsTable)
      ? this.db.prepare(
          `INSERT INTO ${channelFirstsTable} (channel, pubkey, created_at) VALUES (?, ?, ?)
           ON CONFLICT(channel, pubkey) DO UPDATE SET created_at = excluded.created_at
           WHERE excluded.created_at < ${channelFirstsTable}.created_at`,
        )
      : undefined
    this.keepVersion = this.db.prepare(
      'INSERT OR IGNORE INTO kept_versions (id, kind, created_at, raw) VALUES (?, ?, ?, ?)',
    )
    this.insertBatchTx = this.db.transaction(
      (events: readonly NostrEvent[], raws: readonly string[] | undefined) => {
        const outcomes = events.map((e, i) => this.insertOne(e, raws?.[i] ?? JSON.stringify(e)))
        // One usage row update per key and batch, in the same transaction as the events.
        for (const [pubkey, d] of this.batchUsage) this.addUsage?.run(pubkey, d.events, d.bytes)
        return outcomes
      },
    )
  }

  /** What `pubkey` has stored (kinds the usage leaves out are not counted). */
  usageOf(pubkey: string): Usage {
    return this.usage.get(pubkey) ?? { events: 0, bytes: 0 }
  }

  /** How many keys have stored anything counted (grows when a key stores its first event). */
  get usageKeyCount(): number {
    return this.usage.size
  }

  /** Every key that has stored anything counted. */
  usageKeys(): IterableIterator<string> {
    return this.usage.keys()
  }

  private countUsage(event: NostrEvent, events: number, bytes: number): void {
    if (this.usageExempt === undefined || this.usageExempt.has(event.kind)) return
    const d = this.batchUsage.get(event.pubkey)
    if (d === undefined) this.batchUsage.set(event.pubkey, { events, bytes })
    else {
      d.events += events
      d.bytes += bytes
    }
  }

  /**
   * Stores events in a single transaction (group commit). When this returns, the transaction
   * has committed and, with synchronous=full, is on disk, or with `syncApart` will be once
   * `afterCommit` calls back. `raws`, when given, holds each
   * event's JSON.stringify (the hub has it already).
   */
  insertBatch(events: readonly NostrEvent[], raws?: readonly string[]): StoreOutcome[] {
    const written = this.writeBatch(events, raws)
    this.applyUsage(written.usage)
    return written.outcomes
  }

  /**
   * `insertBatch` without counting the usage in this object: what the hub's writer thread
   * (batch-writer.ts) runs on its own connection, handing the usage to the main thread's store.
   */
  writeBatch(events: readonly NostrEvent[], raws?: readonly string[]): WrittenBatch {
    this.batchUsage = new Map()
    try {
      const outcomes = this.insertBatchTx(events, raws)
      const usage: [string, number, number][] = []
      for (const [pubkey, d] of this.batchUsage) usage.push([pubkey, d.events, d.bytes])
      return { outcomes, usage }
    } finally {
      this.batchUsage = new Map()
    }
  }

  /** Counts a committed batch's usage (`writeBatch`) in memory, as the table already does. */
  applyUsage(usage: readonly (readonly [string, number, number])[]): void {
    for (const [pubkey, events, bytes] of usage) {
      const u = this.usage.get(pubkey)
      if (u === undefined) this.usage.set(pubkey, { events, bytes })
      else {
        u.events += events
        u.bytes += bytes
      }
    }
  }

  private insertOne(event: NostrEvent, raw: string): StoreOutcome {
    const rkey = replaceKey(event) ?? null
    if (rkey !== null && keptVersionKinds.has(event.kind)) {
      this.keepVersion.run(event.id, event.kind, event.created_at, raw)
    }
    if (rkey !== null) {
      if (this.hasId.get(event.id) !== undefined) return 'duplicate'
      const existing = this.findByRkey.get(rkey)
      if (existing !== undefined) {
        if (compareNewestFirst(existing, event) <= 0) return 'superseded'
        this.deleteEvent.run(existing.seq)
        this.deleteTags.run(existing.seq)
        this.countUsage(event, -1, -existing.bytes)
      }
    }
    const info = this.insertEvent.run(
      event.id,
      event.pubkey,
      event.kind,
      event.created_at,
      rkey,
      raw,
    )
    if (info.changes === 0) return 'duplicate'
    if (this.usageExempt !== undefined) this.countUsage(event, 1, Buffer.byteLength(raw, 'utf8'))
    this.indexTags(info.lastInsertRowid, event)
    return 'stored'
  }

  /**
   * The tag index: a row per tag `isIndexedTag` takes, one per (name, value) (a repeated tag would
   * make a tag join return the event twice).
   */
  private indexTags(seq: number | bigint, event: NostrEvent): void {
    let indexed: Set<string> | undefined
    for (const tag of event.tags) {
      if (isIndexedTag(tag)) {
        const name = tag[0]!
        const value = tag[1]!
        if (event.tags.length > 1) {
          indexed ??= new Set()
          const key = `${name}\u0000${value}`
          if (indexed.has(key)) continue
          indexed.add(key)
        }
        this.insertTag.run(seq, name, value, event.created_at)
        if (name === 'h') this.noteFirst?.run(value, event.pubkey, event.created_at)
      }
    }
  }

  /**
   * Replaces a stored event's JSON by another form of it with the same id (a sealed event by its
   * opened form, kith-e2e/1) and re-indexes its tags by the one rule, in one transaction (a
   * savepoint inside the caller's). False when no event has that id. The id, kind, author and
   * date are the event's, so only `raw`, its counted bytes and the tags change.
   */
  replaceRaw(event: NostrEvent): boolean {
    const raw = JSON.stringify(event)
    this.batchUsage = new Map()
    const replaced = this.db.transaction(() => {
      const row = this.rowById.get(event.id)
      if (row === undefined) return false
      this.setRaw.run(raw, row.seq)
      this.deleteTags.run(row.seq)
      this.indexTags(row.seq, event)
      if (this.usageExempt !== undefined) {
        this.countUsage(event, 0, Buffer.byteLength(raw, 'utf8') - row.bytes)
        for (const [pubkey, d] of this.batchUsage) this.addUsage?.run(pubkey, d.events, d.bytes)
      }
      return true
    })()
    for (const [pubkey, d] of this.batchUsage) {
      const u = this.usage.get(pubkey)
      if (u !== undefined) u.bytes += d.bytes
    }
    this.batchUsage = new Map()
    return replaced
  }

  /**
   * Events matching any of the filters, newest first, each filter capped by its own limit (or
   * `defaultLimit`, and never above `maxLimit`); duplicates across filters are merged.
   */
  query(
    filters: readonly Filter[],
    limits: { defaultLimit: number; maxLimit: number },
    hide: readonly HideRule[] = [],
  ): StoredRow[] {
    const seen = new Set<string>()
    const rows: StoredRow[] = []
    for (const filter of filters) {
      const limit = Math.min(filter.limit ?? limits.defaultLimit, limits.maxLimit)
      for (const row of this.queryOne(filter, limit, hide)) {
        if (seen.has(row.id)) continue
        seen.add(row.id)
        rows.push(row)
      }
    }
    if (filters.length > 1) rows.sort(compareNewestFirst)
    return rows
  }

  private queryOne(filter: Filter, limit: number, hide: readonly HideRule[]): StoredRow[] {
    const q = this.buildQuery(filter, limit, hide, undefined)
    return q === undefined ? [] : this.statement(q.sql).all(...q.params)
  }

  /**
   * The keys of one filter's rows in NIP-01 order, after `after` when given, at most `limit`: an
   * open sqlite iterator, read a slice at a time by the hub (`rawOf` gives each row's JSON). Keys
   * only, so a query sqlite must sort does not copy every match's JSON into its sorter. Close it
   * (`return()`) before the turn ends: while it is open the connection cannot write.
   */
  openCursor(
    filter: Filter,
    limit: number,
    hide: readonly HideRule[],
    after: QueryCursor | undefined,
  ): IterableIterator<StoredKey> {
    const q = this.buildQuery(filter, limit, hide, after, ['seq', 'created_at', 'id'])
    return q === undefined ? [][Symbol.iterator]() : this.iterate(q.sql, q.params)
  }

  /**
   * One page of a filter's keys in NIP-01 order, after `after` when given, at most `rows`: each
   * as [seq, created_at, id], read in one call in raw mode (arrays, not objects). A reconciliation
   * reads its set this way: a row at a time through an iterator cost it twice as much.
   */
  readKeys(
    filter: Filter,
    rows: number,
    hide: readonly HideRule[],
    after: QueryCursor | undefined,
  ): KeyRow[] {
    const q = this.buildQuery(filter, rows, hide, after, ['seq', 'created_at', 'id'])
    return q === undefined
      ? []
      : (this.pageStatement(q.sql).all(...q.params) as unknown as KeyRow[])
  }

  /**
   * One page of a filter's rows in NIP-01 order, after `after` when given, at most `rows`: each
   * as [seq, created_at, id, raw], read whole in one call (better-sqlite3's `raw` mode, arrays not
   * objects). Issue 18: stepping an iterator row by row and building an object per row was a
   * quarter of a small REQ's time in the store. `raw` is null when the row must be read apart
   * with `rawOf`: when it is over `inlineRawBytes`, so a page never holds many large events, and
   * when sqlite sorts the whole match (`sortsAll`), so its sorter holds keys, not every match's
   * JSON (unless the filter names at most `rows` ids). Fewer than `rows` rows means the filter has
   * no more.
   */
  readPage(
    filter: Filter,
    rows: number,
    hide: readonly HideRule[],
    after: QueryCursor | undefined,
  ): PageRow[] {
    // An ids filter matches no more rows than it names: a sort of those holds little, so their
    // JSON comes with them (one statement, not one plus one per row).
    const few = filter.ids !== undefined && filter.ids.length <= rows
    const q = this.buildQuery(filter, rows, hide, after, ['seq', 'created_at', 'id', inlineRaw])
    if (q === undefined) return []
    if (!few && this.sortsAll(q.sql, q.params)) {
      const keys = this.buildQuery(filter, rows, hide, after, ['seq', 'created_at', 'id', 'NULL'])
      return keys === undefined ? [] : this.pageStatement(keys.sql).all(...keys.params)
    }
    return this.pageStatement(q.sql).all(...q.params)
  }

  private pageStatement(sql: string): Statement<unknown[], PageRow> {
    let stmt = this.pages.get(sql)
    if (stmt === undefined) {
      // Filters with list lengths vary; bound the cache so odd shapes cannot grow it forever.
      if (this.pages.size >= 512) this.pages.clear()
      // Raw mode: each row an array in column order, as `PageRow` spells it.
      stmt = this.db.prepare<unknown[], PageRow>(sql).raw(true)
      this.pages.set(sql, stmt)
    }
    return stmt
  }

  private iterate(sql: string, params: unknown[]): IterableIterator<StoredRow> {
    let stmt = this.statement(sql)
    // Two filters of one REQ can share a shape; a statement iterates once at a time.
    if (stmt.busy) stmt = this.db.prepare<unknown[], StoredRow>(sql)
    return stmt.iterate(...params)
  }

  /**
   * Whether sqlite sorts the whole match of this query (`USE TEMP B-TREE FOR ORDER BY`; sorting
   * only ties of created_at, `FOR LAST TERM OF ORDER BY`, does not count). Asked once per shape.
   */
  private sortsAll(sql: string, params: unknown[]): boolean {
    let sorts = this.sortPlans.get(sql)
    if (sorts === undefined) {
      if (this.sortPlans.size >= 512) this.sortPlans.clear()
      const plan = this.db
        .prepare<unknown[], { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
        .all(...params)
      sorts = plan.some((r) => r.detail === 'USE TEMP B-TREE FOR ORDER BY')
      this.sortPlans.set(sql, sorts)
    }
    return sorts
  }

  /** The canonical JSON of the stored row `seq`. */
  rawOf(seq: number): string | undefined {
    return this.rawBySeq.get(seq)
  }

  private buildQuery(
    filter: Filter,
    limit: number,
    hide: readonly HideRule[],
    after: QueryCursor | undefined,
    columns: readonly string[] = ['id', 'created_at', 'raw', 'seq'],
  ): { sql: string; params: unknown[] } | undefined {
    if (limit <= 0) return undefined
    for (const list of [filter.ids, filter.authors, filter.kinds]) {
      if (list?.length === 0) return undefined
    }
    const tagEntries = Object.entries(filter.tags ?? {})
    if (tagEntries.some(([, values]) => values.length === 0)) return undefined
    // One tag with one value (`#h: [channel]`, the common REQ): walk tags_lookup
    // (name, value, created_at DESC, seq) newest first and join each row to its event, so LIMIT
    // stops the walk; sqlite only orders ties of created_at by id. With ids the id index is
    // quicker.
    const driver =
      this.tagJoin && filter.ids === undefined
        ? tagEntries.find(([, values]) => values.length === 1)
        : undefined
    // Column names as the query must spell them: qualified when tags are joined.
    const e = driver === undefined ? '' : 'e.'
    const time = driver === undefined ? 'created_at' : 't.created_at'
    const where: string[] = []
    const params: unknown[] = []
    const inList = (column: string, values: readonly unknown[]) => {
      where.push(`${e}${column} IN (${values.map(() => '?').join(',')})`)
      params.push(...values)
    }
    if (driver !== undefined) {
      where.push('t.name = ? AND t.value = ?')
      params.push(driver[0], driver[1][0])
    }
    if (filter.ids) inList('id', filter.ids)
    if (filter.authors) inList('pubkey', filter.authors)
    if (filter.kinds) inList('kind', filter.kinds)
    if (filter.since !== undefined) {
      where.push(`${time} >= ?`)
      params.push(filter.since)
    }
    // A cursor's own bound is at or under `until` (it came from a row the filter matched): one
    // upper bound only, or sqlite may range the index from `until` and skip every row read
    // before the cursor on each page (a 200,000-row part read in pages took 11 s, not 0.5).
    if (filter.until !== undefined && (after === undefined || after.created_at > filter.until)) {
      where.push(`${time} <= ?`)
      params.push(filter.until)
    }
    for (const [name, values] of tagEntries) {
      if (driver !== undefined && name === driver[0]) continue
      where.push(
        `${e}seq IN (SELECT seq FROM tags WHERE name = ? AND value IN (${values.map(() => '?').join(',')}))`,
      )
      params.push(name, ...values)
    }
    for (const rule of hide) {
      if (rule.values.length === 0) continue
      const tagged = `${e}seq IN (SELECT seq FROM tags WHERE name = ? AND value IN (${rule.values.map(() => '?').join(',')}))`
      if (rule.kind === undefined) {
        where.push(`NOT ${tagged}`)
      } else {
        where.push(`NOT (${e}kind = ? AND ${tagged})`)
        params.push(rule.kind)
      }
      params.push(rule.tag, ...rule.values)
    }
    if (after !== undefined) {
      // NIP-01 order is created_at descending, then id ascending: resume strictly after `after`.
      where.push(`${time} <= ? AND (${time} < ? OR ${e}id > ?)`)
      params.push(after.created_at, after.created_at, after.id)
    }
    const select = columns
      .map((c) => {
        if (driver === undefined || c === 'NULL') return c
        if (c === inlineRaw) return inlineRaw.replaceAll('raw', 'e.raw')
        return `e.${c} AS ${c}`
      })
      .join(', ')
    const from = driver === undefined ? 'events' : 'tags t JOIN events e ON e.seq = t.seq'
    const sql =
      `SELECT ${select} FROM ${from}` +
      (where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '') +
      ` ORDER BY ${time} DESC, ${e}id ASC LIMIT ?`
    params.push(limit)
    return { sql, params }
  }

  private statement(sql: string): Statement<unknown[], StoredRow> {
    let stmt = this.queries.get(sql)
    if (stmt === undefined) {
      // Filters with list lengths vary; bound the cache so odd shapes cannot grow it forever.
      if (this.queries.size >= 512) this.queries.clear()
      stmt = this.db.prepare<unknown[], StoredRow>(sql)
      this.queries.set(sql, stmt)
    }
    return stmt
  }

  /** Every stored event of one kind, oldest first (for replaying grants at start-up). */
  *eventsOfKind(kind: number): Generator<NostrEvent> {
    const stmt = this.db.prepare<[number], { raw: string }>(
      'SELECT raw FROM events WHERE kind = ? ORDER BY created_at ASC, seq ASC',
    )
    for (const row of stmt.iterate(kind)) yield JSON.parse(row.raw) as NostrEvent
  }

  /**
   * Every stored version of an addressable kind kept in full (channel definitions), replaced
   * ones included, oldest first: the input of a set-based book at start-up.
   */
  *allVersionsOfKind(kind: number): Generator<NostrEvent> {
    const stmt = this.db.prepare<[number], { raw: string }>(
      'SELECT raw FROM kept_versions WHERE kind = ? ORDER BY created_at ASC, id ASC',
    )
    for (const row of stmt.iterate(kind)) yield JSON.parse(row.raw) as NostrEvent
  }

  /**
   * Ids of the versions this store held before it kept versions (see event-schema.ts): admitted
   * by the rules of their time, their earlier versions lost.
   */
  legacyVersionIds(kind: number): string[] {
    return this.db
      .prepare<[number], { id: string }>(
        'SELECT id FROM kept_versions WHERE kind = ? AND legacy = 1',
      )
      .all(kind)
      .map((r) => r.id)
  }

  /** The stored event with this id, a kept older version included. */
  getEvent(id: string): NostrEvent | undefined {
    // Prepared once, on first use: a node reads events by id for each reply it shows.
    this.byId ??= {
      current: this.db.prepare<[string], string>('SELECT raw FROM events WHERE id = ?').pluck(),
      kept: this.db.prepare<[string], string>('SELECT raw FROM kept_versions WHERE id = ?').pluck(),
    }
    const raw = this.byId.current.get(id) ?? this.byId.kept.get(id)
    return raw === undefined ? undefined : (JSON.parse(raw) as NostrEvent)
  }

  /**
   * For each channel (`h` tag value) and each key that posted in it, the earliest created_at:
   * the evidence that a channel was in use before someone defined it (kith-channels). Read from
   * `channel_firsts` where the schema keeps it (hub.db, node.db); else one pass over the tag index.
   */
  earliestInChannels(): ChannelFirst[] {
    if (this.noteFirst !== undefined) {
      return this.db
        .prepare<[], ChannelFirst>(
          `SELECT channel, pubkey, created_at AS createdAt FROM ${channelFirstsTable}`,
        )
        .all()
    }
    return this.db
      .prepare<[], ChannelFirst>(
        `SELECT t.value AS channel, e.pubkey AS pubkey, MIN(t.created_at) AS createdAt
         FROM tags t JOIN events e ON e.seq = t.seq
         WHERE t.name = 'h' GROUP BY t.value, e.pubkey`,
      )
      .all()
  }

  /** Which of these ids are stored. */
  knownIds(ids: readonly string[]): Set<string> {
    const known = new Set<string>()
    for (let i = 0; i < ids.length; i += 500) {
      const part = ids.slice(i, i + 500)
      const rows = this.statement(
        `SELECT id, created_at, raw, seq FROM events WHERE id IN (${part.map(() => '?').join(',')})`,
      ).all(...part)
      for (const r of rows) known.add(r.id)
    }
    return known
  }

  count(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n
  }

  /**
   * Calls `done` once what has committed is on disk: at once, unless the store syncs apart
   * (then after an fsync of the WAL that began after this call; `done(err)` if it failed).
   */
  afterCommit(done: (err?: Error) => void): void {
    if (this.walSync === undefined) done()
    else this.walSync.afterCommit(done)
  }

  /** Resolves once no commit waits for its fsync; call before `close`. */
  drained(): Promise<void> {
    return this.walSync?.drained() ?? Promise.resolve()
  }

  /** fsyncs of the WAL made apart from sqlite (0 without `syncApart`). */
  get walSyncs(): number {
    return this.walSync?.syncs ?? 0
  }

  close(): void {
    this.walSync?.close()
    this.db.close()
  }
}
