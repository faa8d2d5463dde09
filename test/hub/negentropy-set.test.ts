import { describe, expect, it } from 'vitest'
import { nip77 } from 'nostr-tools'
import { randomBytes } from 'node:crypto'
import { asResponderQuery } from '../../src/hub/negentropy.js'
import { NegentropySet, toNegentropyOrder, type NegItem } from '../../src/hub/negentropy-set.js'

/** Items with many equal created_at (ties ordered by id), as a busy channel stores them. */
function items(n: number): NegItem[] {
  return Array.from({ length: n }, (_, i) => ({
    timestamp: 1_700_000_000 + (i % 97),
    id: new Uint8Array(randomBytes(32)),
  }))
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex')

/** NIP-01 order, as the store reads rows: created_at descending, then id ascending. */
function newestFirst(xs: NegItem[]): NegItem[] {
  return [...xs].sort((a, b) =>
    a.timestamp !== b.timestamp ? b.timestamp - a.timestamp : hex(a.id) < hex(b.id) ? -1 : 1,
  )
}

function reference(xs: NegItem[]): nip77.NegentropyStorageVector {
  const s = new nip77.NegentropyStorageVector()
  for (const x of xs) s.insert(x.timestamp, hex(x.id))
  s.seal()
  return s
}

describe('a reconciliation set built from rows in NIP-01 order', () => {
  it('puts rows read newest first into NIP-77 order without sorting', () => {
    const xs = items(3000)
    const ordered = toNegentropyOrder(newestFirst(xs))
    expect(ordered.map((x) => `${x.timestamp}:${hex(x.id)}`)).toEqual(
      reference(xs).items.map((x) => `${x.timestamp}:${hex(x.id)}`),
    )
  })

  it('gives NIP-77’s fingerprint of every range, byte for byte', () => {
    const xs = items(5000)
    const ours = new NegentropySet(toNegentropyOrder(newestFirst(xs)))
    const theirs = reference(xs)
    const ranges: [number, number][] = [
      [0, 0],
      [0, 5000],
      [0, 1024],
      [1023, 1025],
      [1024, 2048],
      [4999, 5000],
      [17, 4321],
    ]
    for (let i = 0; i < 40; i++) {
      const a = Math.floor(Math.random() * 5001)
      const b = Math.floor(Math.random() * 5001)
      ranges.push([Math.min(a, b), Math.max(a, b)])
    }
    for (const [a, b] of ranges)
      expect(hex(ours.fingerprint(a, b))).toBe(hex(theirs.fingerprint(a, b)))
  })

  it('reconciles with a nostr-tools initiator, as the hub answers to exactly the differences', () => {
    const xs = items(4000)
    const hub = new nip77.Negentropy(new NegentropySet(toNegentropyOrder(newestFirst(xs))))
    const mine = xs.filter((_, i) => i % 500 !== 7)
    const extra = items(3)
    const client = new nip77.Negentropy(reference([...mine, ...extra]))
    const need: string[] = []
    const have: string[] = []
    let msg: string | null = client.initiate()
    while (msg !== null) {
      const reply = hub.reconcile(asResponderQuery(msg))
      if (reply === null) break
      msg = client.reconcile(
        reply,
        (id) => have.push(id),
        (id) => need.push(id),
      )
    }
    expect(need.sort()).toEqual(
      xs
        .filter((_, i) => i % 500 === 7)
        .map((x) => hex(x.id))
        .sort(),
    )
    expect(have.sort()).toEqual(extra.map((x) => hex(x.id)).sort())
  })
})
