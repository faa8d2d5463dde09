import { join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { signEvent } from '../../src/events/event.js'
import type { Filter } from '../../src/events/filter.js'
import { StoredStream } from '../../src/hub/stored-stream.js'
import { EventStore, type HideRule } from '../../src/store/event-store.js'
import { tempDir } from '../helpers/tmp.js'

// Issue 30: a slice of a REQ's stored part is bounded by its time plus one page read, however
// many filters the REQ has, and the stream still sends exactly what one query would.

const limits = { defaultLimit: 5000, maxLimit: 5000, reqSliceBytes: 256 * 1024 }

const sk = generateSecretKey()
const history = Array.from({ length: 300 }, (_, i) =>
  signEvent(
    { kind: 9, created_at: 1000 + (i % 97), tags: [['h', `c${i % 10}`]], content: `m${i}` },
    sk,
  ),
)

function setUp() {
  const store = new EventStore(join(tempDir(), 'events.db'))
  store.insertBatch(history)
  return store
}

/** Ten filters, one per channel, as a member's many-channel REQ. */
const tenFilters: Filter[] = Array.from({ length: 10 }, (_, c) => ({ kinds: [9], '#h': [`c${c}`] }))

function drain(stream: StoredStream, timeUp: () => boolean): { ids: string[]; steps: number } {
  const ids: string[] = []
  let steps = 0
  while (
    !stream.step(
      (row) => ids.push(row.id),
      () => true,
      undefined,
      timeUp,
    )
  ) {
    steps++
    if (steps > 10_000) throw new Error('the stream made no progress')
  }
  return { ids, steps }
}

describe('a REQ’s stored part read a slice at a time', () => {
  it('reads one page a slice when its time is up, and still sends what one query would', () => {
    const store = setUp()
    const pages = vi.spyOn(store, 'readPage')
    const hide: readonly HideRule[] = []
    const stream = new StoredStream(store, tenFilters, limits, () => hide)
    const perStep: number[] = []
    let before = 0
    const ids: string[] = []
    for (;;) {
      const done = stream.step(
        (row) => ids.push(row.id),
        () => true,
        undefined,
        () => true,
      )
      perStep.push(pages.mock.calls.length - before)
      before = pages.mock.calls.length
      if (done) break
    }
    // Before, the first slice read all ten filters' first pages before its first row.
    expect(Math.max(...perStep)).toBe(1)
    const expected = store.query(tenFilters, limits).map((r) => r.id)
    expect(ids).toEqual(expected)
    expect(ids).toHaveLength(300)
  })

  it('keeps the pages in hand across slices while the hide rules are the same', () => {
    const store = setUp()
    const pages = vi.spyOn(store, 'readPage')
    const hide: readonly HideRule[] = []
    const stream = new StoredStream(store, [{ kinds: [9] }], limits, () => hide)
    // One row a slice: the page read first serves the slices after it.
    let sent = 0
    for (let i = 0; i < 5; i++) {
      stream.step(
        () => sent++,
        () => false,
      )
    }
    expect(sent).toBe(5)
    expect(pages).toHaveBeenCalledTimes(1)
  })

  it('reads again under new hide rules, and leaves out what they hide from then on', () => {
    const store = setUp()
    let hide: readonly HideRule[] = []
    const stream = new StoredStream(store, [{ kinds: [9] }], limits, () => hide)
    const seen: string[] = []
    stream.step(
      (row) => seen.push(row.raw),
      () => seen.length < 10,
    )
    hide = [{ tag: 'h', values: ['c3'] }]
    const rest = drain(stream, () => false)
    const after = rest.ids.map((id) => store.getEvent(id)!)
    expect(after.some((e) => e.tags.some((t) => t[0] === 'h' && t[1] === 'c3'))).toBe(false)
    // Nothing sent twice, nothing else missed.
    const all = store.query([{ kinds: [9] }], limits)
    const firstIds = seen.map((raw) => (JSON.parse(raw) as { id: string }).id)
    const expected = all
      .map((r) => r.id)
      .filter((id) => !firstIds.includes(id))
      .filter((id) => !store.getEvent(id)!.tags.some((t) => t[0] === 'h' && t[1] === 'c3'))
    expect(rest.ids).toEqual(expected)
  })
})
