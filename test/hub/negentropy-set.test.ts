import { describe, expect, it } from 'vitest'
import { nip77 } from 'nostr-tools'
import { randomBytes } from 'node:crypto'
import { asResponderQuery } from '../../src/hub/negentropy.js'
import { SetReader, sealNewestFirst } from '../../src/hub/negentropy-set.js'
import { sealKeys, type NegentropySet, type NegItem } from '../../src/events/nip77-set.js'

/** Items with many equal created_at (ties ordered by id), as a busy channel stores them. */
function items(n: number): NegItem[] {
  return Array.from({ length: n }, (_, i) => ({
    timestamp: 1_700_000_000 + (i % 97),
    id: new Uint8Array(randomBytes(32)),
  }))
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex')

/** NIP-01 order, as the store reads rows: created_at descending, then id ascending. */
function newestFirst(xs: NegItem[]): { timestamp: number; id: string }[] {
  return [...xs]
    .sort((a, b) =>
      a.timestamp !== b.timestamp ? b.timestamp - a.timestamp : hex(a.id) < hex(b.id) ? -1 : 1,
    )
    .map((x) => ({ timestamp: x.timestamp, id: hex(x.id) }))
}

/** Seals rows read in NIP-01 order `step` items at a time, as the hub does over turns. */
function sealInSteps(xs: NegItem[], step: number): NegentropySet {
  const reader = new SetReader()
  for (const x of newestFirst(xs)) reader.add(x.timestamp, x.id)
  const sealer = reader.seal()
  let steps = 0
  while (!sealer.step(step)) steps++
  expect(steps).toBeGreaterThan(0)
  return sealer.set
}

const itemsOf = (s: nip77.NegentropyStorageVector) =>
  Array.from({ length: s.size() }, (_, i) => {
    const x = s.getItem(i)
    return `${x.timestamp}:${hex(x.id)}`
  })

function reference(xs: NegItem[]): nip77.NegentropyStorageVector {
  const s = new nip77.NegentropyStorageVector()
  for (const x of xs) s.insert(x.timestamp, hex(x.id))
  s.seal()
  return s
}

/** Runs `client` (the initiator) against `hub` (the responder, as the hub answers) to the end. */
function reconcileWith(hub: nip77.Negentropy, client: nip77.Negentropy) {
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
  return { need, have }
}

describe('a reconciliation set built from rows in NIP-01 order', () => {
  it('puts rows read newest first into NIP-77 order without sorting', () => {
    const xs = items(3000)
    expect(itemsOf(sealNewestFirst(newestFirst(xs)))).toEqual(itemsOf(reference(xs)))
    // Sealed a few items at a time (whole runs of one created_at each step), the same order.
    expect(itemsOf(sealInSteps(xs, 50))).toEqual(itemsOf(reference(xs)))
  })

  it('gives NIP-77’s fingerprint of every range, byte for byte', () => {
    const xs = items(5000)
    const ours = sealInSteps(xs, 700)
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
    // And every lower bound a message can name, including short (prefix) ids.
    for (let i = 0; i < 200; i++) {
      const x = xs[Math.floor(Math.random() * xs.length)]!
      const bound = { timestamp: x.timestamp, id: x.id.subarray(0, i % 33) }
      expect(ours.findLowerBound(0, 5000, bound)).toBe(theirs.findLowerBound(0, 5000, bound))
    }
  })

  it('reconciles with a nostr-tools initiator, as the hub answers to exactly the differences', () => {
    const xs = items(4000)
    const hub = new nip77.Negentropy(sealNewestFirst(newestFirst(xs)))
    const mine = xs.filter((_, i) => i % 500 !== 7)
    const extra = items(3)
    const client = new nip77.Negentropy(reference([...mine, ...extra]))
    const { need, have } = reconcileWith(hub, client)
    expect(need.sort()).toEqual(
      xs
        .filter((_, i) => i % 500 === 7)
        .map((x) => hex(x.id))
        .sort(),
    )
    expect(have.sort()).toEqual(extra.map((x) => hex(x.id)).sort())
  })
})

describe('an initiator’s set sealed from a node’s keys', () => {
  const keysOf = (xs: NegItem[]) => xs.map((x) => ({ created_at: x.timestamp, id: hex(x.id) }))

  it('holds nostr-tools’ order and fingerprints, any input order, a key listed twice kept once', () => {
    const xs = items(3000)
    const shuffled = keysOf(xs).sort(() => Math.random() - 0.5)
    const ours = sealKeys([...shuffled, ...shuffled.slice(0, 10)])
    const theirs = reference(xs)
    expect(itemsOf(ours)).toEqual(itemsOf(theirs))
    for (const [a, b] of [
      [0, 3000],
      [5, 2999],
      [1000, 1001],
    ] as const)
      expect(hex(ours.fingerprint(a, b))).toBe(hex(theirs.fingerprint(a, b)))
    expect(new nip77.Negentropy(ours).initiate()).toBe(new nip77.Negentropy(theirs).initiate())
  })

  it('initiates a reconciliation that finds exactly the differences against a hub’s set', () => {
    const xs = items(6000)
    const hub = new nip77.Negentropy(sealNewestFirst(newestFirst(xs)))
    const extra = items(4)
    const client = new nip77.Negentropy(
      sealKeys(keysOf([...xs.filter((_, i) => i % 300 !== 11), ...extra])),
    )
    const { need, have } = reconcileWith(hub, client)
    expect(need.sort()).toEqual(
      xs
        .filter((_, i) => i % 300 === 11)
        .map((x) => hex(x.id))
        .sort(),
    )
    expect(have.sort()).toEqual(extra.map((x) => hex(x.id)).sort())
  })

  it('refuses an id that is not 64 lowercase hex characters', () => {
    for (const id of ['ab', 'g'.repeat(64), '0'.repeat(63), 'A'.repeat(64)]) {
      expect(() => sealKeys([{ created_at: 1, id }])).toThrow(
        /an event id is 64 lowercase hex characters/,
      )
    }
  })
})
