import { compareNewestFirst } from '../events/event.js'
import type { Filter } from '../events/filter.js'
import type {
  EventStore,
  HideRule,
  QueryCursor,
  StoredKey,
  StoredRow,
} from '../store/event-store.js'

/** A row of a filter's query: its JSON too when the store read it in order (`openRows`). */
type Row = StoredKey & { raw?: string }

interface Source {
  filter: Filter
  /** Rows this filter may still yield (its limit, counted as rows are taken). */
  remaining: number
  /** The last row taken: the next slice resumes after it. */
  after: QueryCursor | undefined
  exhausted: boolean
}

/**
 * The stored part of a REQ, read a slice at a time: each filter is its own query in NIP-01 order
 * (newest first, then lower id), resumed after the last row it yielded, and the filters are merged
 * so the client sees one ordered stream with duplicates across filters sent once (they meet side
 * by side in the merge). Nothing is built whole in memory: a slice holds one row per filter (its
 * JSON comes with it when sqlite walks the rows in order, else it is read as the row is sent:
 * `EventStore.openRows`), and its sqlite cursors are closed before it returns, so writes are
 * never blocked between slices.
 */
export class StoredStream {
  private readonly sources: Source[]
  private lastId: string | undefined

  constructor(
    private readonly store: EventStore,
    filters: readonly Filter[],
    limits: { defaultLimit: number; maxLimit: number },
    /** Asked at every slice: what the reader may not see can change while a REQ streams. */
    private readonly hide: () => readonly HideRule[],
  ) {
    this.sources = filters.map((filter) => {
      const remaining = Math.min(filter.limit ?? limits.defaultLimit, limits.maxLimit)
      return { filter, remaining, after: undefined, exhausted: remaining <= 0 }
    })
  }

  get done(): boolean {
    return this.sources.every((s) => s.exhausted)
  }

  /**
   * Emits rows in order while `more()` (asked after each row) says so, or until the stream ends.
   * Returns true when the stream has ended.
   */
  step(emit: (row: StoredRow) => void, more: () => boolean): boolean {
    const live = this.sources.filter((s) => !s.exhausted)
    if (live.length === 0) return true
    const hide = this.hide()
    const cursors: IterableIterator<Row>[] = []
    try {
      for (const s of live) cursors.push(this.store.openRows(s.filter, s.remaining, hide, s.after))
      const heads = cursors.map((c, i) => this.pull(c, live[i]!))
      for (;;) {
        let best = -1
        for (let i = 0; i < heads.length; i++) {
          const h = heads[i]
          if (h !== undefined && (best < 0 || compareNewestFirst(h, heads[best]!) < 0)) best = i
        }
        if (best < 0) break
        const row = heads[best]!
        const source = live[best]!
        source.after = { created_at: row.created_at, id: row.id }
        source.remaining--
        heads[best] = source.remaining > 0 ? this.pull(cursors[best]!, source) : undefined
        if (source.remaining <= 0) source.exhausted = true
        if (row.id === this.lastId) continue
        this.lastId = row.id
        const raw = row.raw ?? this.store.rawOf(row.seq)
        if (raw === undefined) continue
        emit({ id: row.id, created_at: row.created_at, seq: row.seq, raw })
        if (!more()) break
      }
    } finally {
      for (const c of cursors) c.return?.()
    }
    return this.done
  }

  private pull(cursor: IterableIterator<Row>, source: Source): Row | undefined {
    const next = cursor.next()
    if (next.done === true) {
      source.exhausted = true
      return undefined
    }
    return next.value
  }
}
