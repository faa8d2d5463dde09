import type { Statement } from 'better-sqlite3'
import { compareNewestFirst, replaceKey, type NostrEvent } from '../events/event.js'
import type { Filter } from '../events/filter.js'
import { Kind } from '../events/kinds.js'
import { openDatabase, type Db, type Migration, type OpenOptions } from './db.js'
import { eventStoreMigrations } from './event-schema.js'

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
}

const maxTagValueIndexed = 1024

/**
 * Addressable kinds whose every version is also kept in `kept_versions` (see event-schema.ts):
 * channel definitions, whose meaning depends on the whole set of them.
 */
const keptVersionKinds: ReadonlySet<number> = new Set([Kind.ChannelDefinition])

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

/** The sqlite event store of a hub: batch inserts in one transaction, NIP-01 queries. */
export class EventStore {
  readonly db: Db
  private readonly insertEvent: Statement<[string, string, number, number, string | null, string]>
  private readonly insertTag: Statement<[number | bigint, string, string, number]>
  private readonly findByRkey: Statement<[string], ExistingRow>
  private readonly hasId: Statement<[string], { one: number }>
  private readonly deleteEvent: Statement<[number]>
  private readonly deleteTags: Statement<[number]>
  private readonly keepVersion: Statement<[string, number, number, string]>
  private readonly queries = new Map<string, Statement<unknown[], StoredRow>>()
  private readonly insertBatchTx: (
    events: readonly NostrEvent[],
    raws: readonly string[] | undefined,
  ) => StoreOutcome[]

  /**
   * Opens `path`, or wraps an already open database whose schema includes the event tables
   * (node.db adds its own tables after them).
   */
  constructor(
    pathOrDb: string | Db,
    opts: OpenOptions & { migrations?: readonly Migration[] } = {},
  ) {
    this.db =
      typeof pathOrDb === 'string'
        ? openDatabase(pathOrDb, opts.migrations ?? eventStoreMigrations, opts)
        : pathOrDb
    this.insertEvent = this.db.prepare(
      'INSERT OR IGNORE INTO events (id, pubkey, kind, created_at, rkey, raw) VALUES (?, ?, ?, ?, ?, ?)',
    )
    this.insertTag = this.db.prepare(
      'INSERT INTO tags (seq, name, value, created_at) VALUES (?, ?, ?, ?)',
    )
    this.findByRkey = this.db.prepare('SELECT seq, id, created_at FROM events WHERE rkey = ?')
    this.hasId = this.db.prepare('SELECT 1 AS one FROM events WHERE id = ?')
    this.deleteEvent = this.db.prepare('DELETE FROM events WHERE seq = ?')
    this.deleteTags = this.db.prepare('DELETE FROM tags WHERE seq = ?')
    this.keepVersion = this.db.prepare(
      'INSERT OR IGNORE INTO kept_versions (id, kind, created_at, raw) VALUES (?, ?, ?, ?)',
    )
    this.insertBatchTx = this.db.transaction(
      (events: readonly NostrEvent[], raws: readonly string[] | undefined) =>
        events.map((e, i) => this.insertOne(e, raws?.[i] ?? JSON.stringify(e))),
    )
  }

  /**
   * Stores events in a single transaction (group commit). When this returns, the transaction
   * has committed and, with synchronous=full, is on disk. `raws`, when given, holds each
   * event's JSON.stringify (the hub has it already).
   */
  insertBatch(events: readonly NostrEvent[], raws?: readonly string[]): StoreOutcome[] {
    return this.insertBatchTx(events, raws)
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
    for (const tag of event.tags) {
      const [name, value] = tag
      if (name?.length === 1 && value !== undefined && value.length <= maxTagValueIndexed) {
        this.insertTag.run(info.lastInsertRowid, name, value, event.created_at)
      }
    }
    return 'stored'
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
    if (limit === 0) return []
    for (const list of [filter.ids, filter.authors, filter.kinds]) {
      if (list?.length === 0) return []
    }
    const where: string[] = []
    const params: unknown[] = []
    const inList = (column: string, values: readonly unknown[]) => {
      where.push(`${column} IN (${values.map(() => '?').join(',')})`)
      params.push(...values)
    }
    if (filter.ids) inList('id', filter.ids)
    if (filter.authors) inList('pubkey', filter.authors)
    if (filter.kinds) inList('kind', filter.kinds)
    if (filter.since !== undefined) {
      where.push('created_at >= ?')
      params.push(filter.since)
    }
    if (filter.until !== undefined) {
      where.push('created_at <= ?')
      params.push(filter.until)
    }
    for (const [name, values] of Object.entries(filter.tags ?? {})) {
      if (values.length === 0) return []
      where.push(
        `seq IN (SELECT seq FROM tags WHERE name = ? AND value IN (${values.map(() => '?').join(',')}))`,
      )
      params.push(name, ...values)
    }
    for (const rule of hide) {
      if (rule.values.length === 0) continue
      const tagged = `seq IN (SELECT seq FROM tags WHERE name = ? AND value IN (${rule.values.map(() => '?').join(',')}))`
      if (rule.kind === undefined) {
        where.push(`NOT ${tagged}`)
      } else {
        where.push(`NOT (kind = ? AND ${tagged})`)
        params.push(rule.kind)
      }
      params.push(rule.tag, ...rule.values)
    }
    const sql =
      'SELECT id, created_at, raw, seq FROM events' +
      (where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '') +
      ' ORDER BY created_at DESC, id ASC LIMIT ?'
    params.push(limit)
    return this.statement(sql).all(...params)
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
    const row =
      this.db.prepare<[string], { raw: string }>('SELECT raw FROM events WHERE id = ?').get(id) ??
      this.db
        .prepare<[string], { raw: string }>('SELECT raw FROM kept_versions WHERE id = ?')
        .get(id)
    return row === undefined ? undefined : (JSON.parse(row.raw) as NostrEvent)
  }

  /**
   * For each channel (`h` tag value) and each key that posted in it, the earliest created_at:
   * the evidence that a channel was in use before someone defined it (kith-channels). One pass
   * over the tag index.
   */
  earliestInChannels(): ChannelFirst[] {
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

  close(): void {
    this.db.close()
  }
}
