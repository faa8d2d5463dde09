import { nip77 } from 'nostr-tools'
import { sha256 } from '@noble/hashes/sha2.js'

/** One (created_at, id) of a reconciliation's set, as nostr-tools' Negentropy reads it. */
export interface NegItem {
  timestamp: number
  id: Uint8Array
}

/** Items between two stored sums: a fingerprint adds at most this many ids itself. */
const checkpointEvery = 1024

/** The 256-bit sum of ids (little-endian 32-bit words, carries dropped past 2^256): NIP-77's. */
type Sum = Uint32Array

function addId(sum: Sum, id: Uint8Array): void {
  let carry = 0
  for (let w = 0, o = 0; w < 8; w++, o += 4) {
    const word = (id[o]! | (id[o + 1]! << 8) | (id[o + 2]! << 16) | (id[o + 3]! << 24)) >>> 0
    const next = sum[w]! + word + carry
    sum[w] = next >>> 0
    carry = next > 0xffffffff ? 1 : 0
  }
}

/** `a - b` modulo 2^256, as 32 little-endian bytes. */
function difference(a: Sum, b: Sum): Uint8Array {
  const out = new Uint32Array(8)
  let borrow = 0
  for (let w = 0; w < 8; w++) {
    const next = a[w]! - b[w]! - borrow
    borrow = next < 0 ? 1 : 0
    out[w] = next >>> 0
  }
  const bytes = new Uint8Array(32)
  for (let w = 0; w < 8; w++) {
    const v = out[w]!
    bytes[w * 4] = v & 255
    bytes[w * 4 + 1] = (v >>> 8) & 255
    bytes[w * 4 + 2] = (v >>> 16) & 255
    bytes[w * 4 + 3] = (v >>> 24) & 255
  }
  return bytes
}

/** NIP-77's variable-length unsigned integer (base 128, most significant group first). */
function varint(n: number): number[] {
  const groups = [n & 127]
  for (let rest = Math.floor(n / 128); rest > 0; rest = Math.floor(rest / 128)) {
    groups.unshift((rest & 127) | 128)
  }
  return groups
}

/**
 * A sealed reconciliation set whose fingerprints cost at most `checkpointEvery` additions, not
 * one per item in the range: the sum of every id before each checkpoint is kept (32 bytes per
 * 1,024 items), so a fingerprint is the difference of two sums. nostr-tools' storage adds every
 * id of the range, so each message over a large set cost the hub a pass over all of it. The
 * fingerprints are NIP-77's (sha256 of the sum and the count, first 16 bytes), byte for byte.
 */
export class NegentropySet extends nip77.NegentropyStorageVector {
  private readonly sums: Sum[]

  /** `items` in NIP-77 order (created_at ascending, then id ascending), no duplicates. */
  constructor(items: NegItem[]) {
    super()
    this.items = items
    this.sealed = true
    this.sums = [new Uint32Array(8)]
    const running = new Uint32Array(8)
    for (let i = 0; i < items.length; i++) {
      addId(running, items[i]!.id)
      if ((i + 1) % checkpointEvery === 0) this.sums.push(running.slice())
    }
  }

  override fingerprint(begin: number, end: number): Uint8Array {
    this._checkBounds(begin, end)
    const sum = difference(this.sumBefore(end), this.sumBefore(begin))
    return sha256(Uint8Array.from([...sum, ...varint(end - begin)])).subarray(0, 16)
  }

  /** The sum of the ids of items [0, i). */
  private sumBefore(i: number): Sum {
    const k = Math.floor(i / checkpointEvery)
    const sum = this.sums[k]!.slice()
    for (let j = k * checkpointEvery; j < i; j++) addId(sum, this.items[j]!.id)
    return sum
  }
}

/**
 * Items read in NIP-01 order (created_at descending, then id ascending) put in NIP-77 order
 * (created_at ascending, then id ascending), in place: reversed, then each run of one created_at
 * reversed back. Linear, where a sort of half a million items took the main thread for long.
 */
export function toNegentropyOrder(items: NegItem[]): NegItem[] {
  items.reverse()
  let start = 0
  for (let i = 1; i <= items.length; i++) {
    if (i === items.length || items[i]!.timestamp !== items[start]!.timestamp) {
      if (i - start > 1) reverseRange(items, start, i)
      start = i
    }
  }
  return items
}

function reverseRange(items: NegItem[], from: number, to: number): void {
  for (let a = from, b = to - 1; a < b; a++, b--) {
    const t = items[a]!
    items[a] = items[b]!
    items[b] = t
  }
}
