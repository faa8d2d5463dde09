import { compareNewestFirstBy } from '../events/event.js'
import type { Filter } from '../events/filter.js'
import type { EventStore, HideRule, PageRow, QueryCursor, StoredRow } from '../store/event-store.js'

/** Bounds of the rows read per query of a filter (see `StoredStream.pageSize`). */
const minPageRows = 16
const maxPageRows = 500

interface Source {
  filter: Filter
  /** Rows this filter may still yield (its limit, counted as rows are taken). */
  remaining: number
  /** The last row taken: the next page resumes after it. */
  after: QueryCursor | undefined
  exhausted: boolean
  /** Rows read and not yet taken, and where the next one is (kept across slices, see `step`). */
  page: PageRow[]
  at: number
  /** The page was short: once it is used up, the filter has no more rows. */
  last: boolean
}

/** NIP-01 order of two page rows: newest first, then lower id. */
function newerFirst(a: PageRow, b: PageRow): number {
  return compareNewestFirstBy(a[1], a[2], b[1], b[2])
}

/**
 * The stored part of a REQ, read a slice at a time: each filter is its own query in NIP-01 order
 * (newest first, then lower id), read a page at a time and resumed after the last row it yielded,
 * and the filters are merged so the client sees one ordered stream with duplicates across filters
 * sent once (they meet side by side in the merge). Nothing large is built in memory: a page holds
 * about a slice's worth of rows (`pageSize`), large events among them as keys only
 * (`EventStore.readPage`), and no sqlite statement stays open between slices. What the reader may
 * see is asked at every slice; pages read under other rules are dropped and read again.
 */
export class StoredStream {
  private readonly sources: Source[]
  private lastId: string | undefined
  /** The JSON sent so far, to size pages to what a slice sends (`pageSize`). */
  private sentRows = 0
  private sentChars = 0
  /** The hide rules the pages in hand were read under. */
  private pagesHide: readonly HideRule[] | undefined

  constructor(
    private readonly store: EventStore,
    filters: readonly Filter[],
    private readonly limits: { defaultLimit: number; maxLimit: number; reqSliceBytes: number },
    /** Asked at every slice: what the reader may not see can change while a REQ streams. */
    private readonly hide: () => readonly HideRule[],
  ) {
    this.sources = filters.map((filter) => {
      const remaining = Math.min(filter.limit ?? limits.defaultLimit, limits.maxLimit)
      return {
        filter,
        remaining,
        after: undefined,
        exhausted: remaining <= 0,
        page: [],
        at: 0,
        last: false,
      }
    })
  }

  get done(): boolean {
    return this.sources.every((s) => s.exhausted)
  }

  /** Drops the pages in hand (a reader that does not read need not pin them); reads resume after `after`. */
  release(): void {
    for (const s of this.sources) {
      s.page = []
      s.at = 0
      s.last = false
    }
    this.pagesHide = undefined
  }

  /**
   * Emits rows in order while `more()` (asked after each row) says so, or until the stream ends,
   * or until `timeUp` says so. `timeUp` is asked after each row and before each page read but the
   * slice's first, so a slice is at most its time plus one page: a REQ of many filters reads
   * their first pages over as many slices as that takes, not all in one (issue 30: a ten-filter
   * REQ read ten pages, ~10 ms, before its first row). Pages in hand are kept for the next slice
   * while what the reader may not see is unchanged (`hide()` returns the same rules object), so
   * stopping mid-page costs no re-read; when the rules change they are read afresh after `after`.
   * Returns true when the stream has ended.
   */
  step(
    emit: (row: StoredRow) => void,
    more: () => boolean,
    flush?: () => void,
    timeUp?: () => boolean,
  ): boolean {
    const live = this.sources.filter((s) => !s.exhausted)
    if (live.length === 0) return true
    const hide = this.hide()
    if (hide !== this.pagesHide) {
      this.release()
      this.pagesHide = hide
    }
    const rows = this.pageSize(live.length)
    // The stream's first pages are half size, and what was emitted is flushed before each
    // further read: the client parses the first rows while the rest are read (issue 18).
    const first = this.sentRows === 0 ? Math.max(1, Math.ceil(rows / 2)) : rows
    let read = false
    /** The source's next row; undefined when it has none, or when its page is due and time is up. */
    const headOf = (s: Source, pageRows: number): PageRow | 'later' | undefined => {
      if (s.at < s.page.length) return s.page[s.at]
      if (read && timeUp?.() === true) return 'later'
      read = true
      return this.head(s, hide, pageRows, flush)
    }
    const heads: (PageRow | undefined)[] = []
    for (const s of live) {
      const h = headOf(s, first)
      if (h === 'later') return this.done
      heads.push(h)
    }
    for (;;) {
      let best = -1
      for (let i = 0; i < heads.length; i++) {
        const h = heads[i]
        if (h !== undefined && (best < 0 || newerFirst(h, heads[best]!) < 0)) best = i
      }
      if (best < 0) break
      const row = heads[best]!
      const source = live[best]!
      const [seq, created_at, id] = row
      source.after = { created_at, id }
      source.remaining--
      source.at++
      if (source.remaining <= 0) {
        source.exhausted = true
        source.page = []
      }
      if (id !== this.lastId) {
        this.lastId = id
        const raw = row[3] ?? this.store.rawOf(seq)
        if (raw !== undefined) {
          this.sentRows++
          this.sentChars += raw.length
          emit({ id, created_at, seq, raw })
        }
      }
      if (!more() || timeUp?.() === true) break
      if (source.exhausted) {
        heads[best] = undefined
        continue
      }
      const h = headOf(source, rows)
      if (h === 'later') break
      heads[best] = h
    }
    return this.done
  }

  /**
   * Rows per page: about what one slice sends (`reqSliceBytes`, shared by the live filters), at
   * the average size of the events sent so far (512 bytes before the first). A page much larger
   * than a slice would be read only to be dropped when the slice ends; a much smaller one costs
   * a query per few rows (issue 18: window·500 read in pages of 100 took 30% longer than in one).
   */
  private pageSize(liveFilters: number): number {
    const average = this.sentRows === 0 ? 512 : Math.max(1, this.sentChars / this.sentRows)
    const rows = Math.floor(this.limits.reqSliceBytes / (average * liveFilters))
    return Math.min(maxPageRows, Math.max(minPageRows, rows))
  }

  /**
   * The source's next row, reading a page of up to `pageRows` when the one in hand is used up
   * (after `flush`, which sends what the slice has emitted so far).
   */
  private head(
    source: Source,
    hide: readonly HideRule[],
    pageRows: number,
    flush: (() => void) | undefined,
  ): PageRow | undefined {
    if (source.at >= source.page.length) {
      if (source.last) {
        source.exhausted = true
        return undefined
      }
      const rows = Math.min(source.remaining, pageRows)
      flush?.()
      source.page = this.store.readPage(source.filter, rows, hide, source.after)
      source.at = 0
      source.last = source.page.length < rows
      if (source.page.length === 0) {
        source.exhausted = true
        return undefined
      }
    }
    return source.page[source.at]
  }
}
