import { nip77 } from 'nostr-tools'
import { sha256 } from '@noble/hashes/sha2.js'
import { KithError } from '../errors.js'

// NIP-77 (negentropy) sets held as flat arrays with stored sums: what a hub answers from and what
// a node initiates with. Pure: no Node built-in (it runs wherever reconciliation does).

/** One (created_at, id) of a reconciliation's set, as nostr-tools' Negentropy reads it. */
export interface NegItem {
  timestamp: number
  id: Uint8Array
}

/**
 * Items between two stored sums: a fingerprint adds at most this many ids itself. An answer over
 * a large set computes thousands of fingerprints: at 1,024 a catch-up of 1% of 100,000 events
 * cost the hub 0.4 s more; at 16 the sums take 2 bytes an item.
 */
const checkpointEvery = 16

/**
 * 256-bit sums of ids (NIP-77's: little-endian 32-bit words, carries dropped past 2^256), eight
 * words each, end to end in one array.
 */
type Sums = Uint32Array

/** Whether a Uint32Array reads an id's bytes as NIP-77's little-endian words (all Node targets). */
const littleEndian = new Uint8Array(Uint32Array.of(1).buffer)[0] === 1

/** The words of `ids` when they can be read in place (aligned, little-endian). */
function wordsOf(ids: Uint8Array): Uint32Array | undefined {
  return littleEndian && ids.byteOffset % 4 === 0
    ? new Uint32Array(ids.buffer, ids.byteOffset, ids.length / 4)
    : undefined
}

/** Adds id `i` of `ids` (its words in `words`, when given) to the sum at word `to` of `sums`. */
function addId(sums: Sums, to: number, ids: Uint8Array, words: Uint32Array | undefined, i: number) {
  let carry = 0
  for (let w = 0; w < 8; w++) {
    const o = i * 32 + w * 4
    const word =
      words !== undefined
        ? words[i * 8 + w]!
        : (ids[o]! | (ids[o + 1]! << 8) | (ids[o + 2]! << 16) | (ids[o + 3]! << 24)) >>> 0
    const next = sums[to + w]! + word + carry
    sums[to + w] = next >>> 0
    carry = next > 0xffffffff ? 1 : 0
  }
}

/** NIP-77's variable-length unsigned integer (base 128, most significant group first). */
function varint(n: number): number[] {
  const groups = [n & 127]
  for (let rest = Math.floor(n / 128); rest > 0; rest = Math.floor(rest / 128)) {
    groups.unshift((rest & 127) | 128)
  }
  return groups
}

/** nostr-tools' order of two ids or bounds: byte by byte, then the shorter first. */
function compareBytes(a: Uint8Array, aAt: number, aLength: number, b: Uint8Array): number {
  const n = Math.min(aLength, b.length)
  for (let i = 0; i < n; i++) {
    const d = a[aAt + i]! - b[i]!
    if (d !== 0) return d
  }
  return aLength - b.length
}

/**
 * A sealed reconciliation set held as two flat arrays (created_at of each item, and every id's
 * 32 bytes end to end), not an object per item: a set of 500,000 items is 20 MB outside the
 * JavaScript heap instead of a million small objects the collector walks, and a set dropped
 * half read (a client re-opening) is freed at once.
 *
 * Its fingerprints cost at most `checkpointEvery` additions, not one per item in the range: the
 * sum of every id before each checkpoint is kept (32 bytes per 16 items), so a fingerprint is
 * the difference of two sums. nostr-tools' storage adds every id of the range, so each message
 * over a large set cost the hub a pass over all of it. The fingerprints are NIP-77's (sha256 of
 * the sum and the count, first 16 bytes), byte for byte.
 */
export class NegentropySet extends nip77.NegentropyStorageVector {
  /** The ids as words, read in place (see `wordsOf`). */
  private readonly words: Uint32Array | undefined
  /** Scratch: the sums before `begin` and `end` (words 0–7, 8–15). */
  private readonly scratch = new Uint32Array(16)
  /** Scratch: the hash's input (the sum's 32 bytes and the count's varint). */
  private readonly input = new Uint8Array(32 + 10)
  /**
   * The last end asked and the words of `scratch` its sum is in: a round asks for 16 buckets
   * back to back, each beginning where the one before ended.
   */
  private lastEnd = -1
  private lastEndAt = 8

  /** Items in NIP-77 order (created_at ascending, then id ascending), no duplicates. */
  constructor(
    private readonly times: Float64Array,
    private readonly ids: Uint8Array,
    private readonly sums: Sums,
  ) {
    super()
    this.sealed = true
    this.words = wordsOf(ids)
  }

  override size(): number {
    return this.times.length
  }

  override getItem(i: number): NegItem {
    if (i >= this.times.length) throw new Error('out of range')
    return { timestamp: this.times[i]!, id: this.ids.subarray(i * 32, i * 32 + 32) }
  }

  override iterate(begin: number, end: number, cb: (item: NegItem, i: number) => boolean): void {
    this._checkBounds(begin, end)
    for (let i = begin; i < end; i++) if (!cb(this.getItem(i), i)) break
  }

  override findLowerBound(begin: number, end: number, bound: NegItem): number {
    this._checkBounds(begin, end)
    let first = begin
    let count = end - begin
    while (count > 0) {
      const step = Math.floor(count / 2)
      const at = first + step
      const t = this.times[at]!
      const less =
        t !== bound.timestamp
          ? t < bound.timestamp
          : compareBytes(this.ids, at * 32, 32, bound.id) < 0
      if (less) {
        first = at + 1
        count -= step + 1
      } else count = step
    }
    return first
  }

  override _checkBounds(begin: number, end: number): void {
    if (begin > end || end > this.times.length) throw new Error('bad range')
  }

  override fingerprint(begin: number, end: number): Uint8Array {
    this._checkBounds(begin, end)
    const s = this.scratch
    // The begin's sum is the last end's when a round walks its buckets in order.
    const beginAt =
      this.lastEnd === begin ? this.lastEndAt : this.sumBefore(begin, this.lastEndAt ^ 8)
    const endAt = beginAt ^ 8
    this.sumBefore(end, endAt)
    this.lastEnd = end
    this.lastEndAt = endAt
    // The difference (end − begin, modulo 2^256) as 32 little-endian bytes, then the count.
    const input = this.input
    let borrow = 0
    for (let w = 0; w < 8; w++) {
      const next = s[endAt + w]! - s[beginAt + w]! - borrow
      borrow = next < 0 ? 1 : 0
      const v = next >>> 0
      input[w * 4] = v & 255
      input[w * 4 + 1] = (v >>> 8) & 255
      input[w * 4 + 2] = (v >>> 16) & 255
      input[w * 4 + 3] = (v >>> 24) & 255
    }
    const count = varint(end - begin)
    input.set(count, 32)
    return sha256(input.subarray(0, 32 + count.length)).subarray(0, 16)
  }

  /** Puts the sum of the ids of items [0, i) in words `at`–`at + 7` of the scratch; returns `at`. */
  private sumBefore(i: number, at: number): number {
    const k = Math.floor(i / checkpointEvery)
    const s = this.scratch
    s.set(this.sums.subarray(k * 8, k * 8 + 8), at)
    for (let j = k * checkpointEvery; j < i; j++) addId(s, at, this.ids, this.words, j)
    return at
  }
}

/**
 * Puts items read in NIP-01 order into NIP-77 order (created_at ascending, then id ascending)
 * and adds up their checkpoint sums, a step at a time: half a million items took the main thread
 * for tens of milliseconds in one go, so a hub seals a set over several turns. NIP-77 order is
 * the runs of one created_at taken last run first, each run kept as read (ids ascending):
 * linear, no sort.
 */
export class SetSealer {
  private readonly times: Float64Array
  private readonly ids: Uint8Array
  /** The sum before each checkpoint: the first (before item 0) is zero. */
  private readonly sums: Sums
  private readonly running = new Uint32Array(8)
  private readonly words: Uint32Array | undefined
  /** Items placed so far; and the end (exclusive) of the next run to take, in read order. */
  private placed = 0
  private runEnd: number

  constructor(
    private readonly readTimes: Float64Array,
    private readonly readIds: Uint8Array,
  ) {
    this.times = new Float64Array(readTimes.length)
    this.ids = new Uint8Array(readIds.length)
    this.sums = new Uint32Array(8 * (Math.floor(readTimes.length / checkpointEvery) + 1))
    this.words = wordsOf(this.ids)
    this.runEnd = readTimes.length
  }

  /** Places at least `count` more items (whole runs); true once every item is placed. */
  step(count: number): boolean {
    const until = Math.min(this.times.length, this.placed + count)
    while (this.placed < until) {
      let start = this.runEnd - 1
      const t = this.readTimes[start]!
      while (start > 0 && this.readTimes[start - 1] === t) start--
      const n = this.runEnd - start
      this.times.fill(t, this.placed, this.placed + n)
      this.ids.set(this.readIds.subarray(start * 32, this.runEnd * 32), this.placed * 32)
      const words = this.words
      for (let i = this.placed; i < this.placed + n; i++) {
        addId(this.running, 0, this.ids, words, i)
        if ((i + 1) % checkpointEvery === 0)
          this.sums.set(this.running, ((i + 1) / checkpointEvery) * 8)
      }
      this.placed += n
      this.runEnd = start
    }
    return this.placed === this.times.length
  }

  /** The sealed set, once `step` said every item is placed. */
  get set(): NegentropySet {
    if (this.placed !== this.times.length) throw new Error('the set is not sealed yet')
    return new NegentropySet(this.times, this.ids, this.sums)
  }
}

/** An event key as a node's store lists it: its `created_at` and its id in lowercase hex. */
export interface SetKey {
  created_at: number
  id: string
}

const hexValue = new Int8Array(128).fill(-1)
for (let i = 0; i < 16; i++) {
  hexValue['0123456789abcdef'.charCodeAt(i)] = i
}

/**
 * Writes the 64 lowercase hex characters of `id` (NIP-01's form, whose order as a string is its
 * bytes' order, which the sort in `sealKeys` relies on) as 32 bytes at byte `at` of `out`.
 */
function writeId(out: Uint8Array, at: number, id: string): void {
  if (id.length !== 64)
    throw new KithError('invalid', `an event id is 64 lowercase hex characters: ${id}`)
  for (let i = 0; i < 32; i++) {
    const hi = hexValue[id.charCodeAt(2 * i)] ?? -1
    const lo = hexValue[id.charCodeAt(2 * i + 1)] ?? -1
    if (hi < 0 || lo < 0)
      throw new KithError('invalid', `an event id is 64 lowercase hex characters: ${id}`)
    out[at + i] = (hi << 4) | lo
  }
}

/**
 * An initiator's set: `keys` in any order, an id listed twice kept once. The same flat arrays and
 * stored sums as the hub's sets, so each fingerprint of a round costs at most `checkpointEvery`
 * additions: nostr-tools' storage adds every id of each range, and over a million keys that was
 * most of a node's catch-up (docs/performance.md, issue 34).
 */
export function sealKeys(keys: readonly SetKey[]): NegentropySet {
  // NIP-01 order (newest first, then id ascending: lowercase hex orders as its bytes), which the
  // sealer turns into NIP-77 order run by run.
  const sorted = [...keys].sort((a, b) =>
    a.created_at !== b.created_at
      ? b.created_at - a.created_at
      : a.id < b.id
        ? -1
        : a.id > b.id
          ? 1
          : 0,
  )
  const times = new Float64Array(sorted.length)
  const ids = new Uint8Array(sorted.length * 32)
  let n = 0
  for (let i = 0; i < sorted.length; i++) {
    const k = sorted[i]!
    const prev = sorted[i - 1]
    if (prev !== undefined && prev.id === k.id && prev.created_at === k.created_at) continue
    times[n] = k.created_at
    writeId(ids, n * 32, k.id)
    n++
  }
  const sealer = new SetSealer(times.subarray(0, n), ids.subarray(0, n * 32))
  sealer.step(n)
  return sealer.set
}
