import { describe, expect, it } from 'vitest'
import { nip77 } from 'nostr-tools'
import { grantOwner, startTestHub } from '../helpers/hub.js'
import type { RawClient } from '../helpers/raw-client.js'

const now = () => Math.floor(Date.now() / 1000)

/** A client's first message over an empty set: the hub answers with its own ranges. */
function initiate(): string {
  const storage = new nip77.NegentropyStorageVector()
  storage.seal()
  return new nip77.Negentropy(storage).initiate()
}

const answer = (c: RawClient, subId: string) =>
  c.next((f) => (f[0] === 'NEG-MSG' || f[0] === 'NEG-ERR') && f[1] === subId)

describe('NIP-77 work is bounded per person', () => {
  it('caps one person’s open reconciliations across all their connections', async () => {
    const t = await startTestHub({ limits: { negMaxOpen: 4, negMaxOpenPerPerson: 3 } })
    const a = await t.member()
    const b = await t.member()
    for (const [c, id] of [
      [a, 'n1'],
      [a, 'n2'],
      [b, 'n3'],
    ] as const) {
      c.send(['NEG-OPEN', id, { kinds: [9] }, initiate()])
      expect((await answer(c, id))[0]).toBe('NEG-MSG')
    }
    b.send(['NEG-OPEN', 'n4', { kinds: [9] }, initiate()])
    expect(await answer(b, 'n4')).toEqual([
      'NEG-ERR',
      'n4',
      'blocked: at most 3 reconciliations at once per person (negentropy_max_sessions_per_person)',
    ])
  })

  it('charges building the set and answering to the person’s work budget, as REQs are', async () => {
    const t = await startTestHub({
      limits: { eventsPerSecond: 0, reqWorkMsPerSecond: 50, reqWorkBurstMs: 0.01 },
    })
    const c = await t.member()
    const events = Array.from({ length: 300 }, (_, i) =>
      t.sign({ kind: 1, created_at: now() - 1000 + i, content: `e${i}` }),
    )
    for (const e of events) c.send(['EVENT', e])
    for (const e of events) expect((await c.ok(e.id))[2]).toBe(true)
    c.send(['NEG-OPEN', 'n1', { kinds: [1] }, initiate()])
    expect((await answer(c, 'n1'))[0]).toBe('NEG-MSG')
    // The set it just built spent the budget: a second build waits for it to refill (as a REQ
    // does), and is answered; it is not refused.
    c.send(['NEG-OPEN', 'n2', { kinds: [1] }, initiate()])
    expect((await answer(c, 'n2'))[0]).toBe('NEG-MSG')
    // A message in an open reconciliation waits for the budget instead, and is answered.
    c.send(['NEG-MSG', 'n1', initiate()])
    expect((await answer(c, 'n1'))[0]).toBe('NEG-MSG')
  })

  it('caps the connections one person holds authenticated', async () => {
    const t = await startTestHub({ limits: { maxConnectionsPerPerson: 2 } })
    await t.member()
    await t.member()
    const third = await t.connect()
    const ok = await third.auth(t.url, t.ownerSk)
    expect(ok[2]).toBe(false)
    expect(ok[3]).toBe(
      'rate-limited: connections: this person holds 2 connections (max_connections_per_person 2); close one',
    )
  })

  it('builds a large set a slice at a time: another member’s EVENTs are answered meanwhile', async () => {
    // Slices of 10 rows, and a work budget the founder's build outruns: its slices wait for it
    // between turns, as a REQ's do, where one synchronous build answered before anyone else.
    const t = await startTestHub({
      limits: {
        eventsPerSecond: 0,
        negSliceItems: 10,
        reqWorkMsPerSecond: 50,
        reqWorkBurstMs: 0.5,
      },
    })
    const founder = await t.member()
    const { sk: bobSk, client: bobClient } = await grantOwner(t)
    const stored = Array.from({ length: 1000 }, (_, i) =>
      t.sign({ kind: 1, created_at: now() - 1000 + (i % 300), content: `e${i}` }),
    )
    for (let i = 0; i < stored.length; i += 200) {
      const window = stored.slice(i, i + 200)
      for (const e of window) founder.send(['EVENT', e])
      for (const e of window) expect((await founder.ok(e.id))[2]).toBe(true)
    }
    const bob = await bobClient()

    // The founder opens a reconciliation over 1,000 events (100 slices of 10); Bob publishes,
    // one EVENT after each OK, until the founder's first answer comes.
    const client = new nip77.Negentropy(
      (() => {
        const s = new nip77.NegentropyStorageVector()
        s.seal()
        return s
      })(),
    )
    founder.send(['NEG-OPEN', 'big', { kinds: [1] }, client.initiate()])
    let answered = false
    const first = founder
      .next((f) => (f[0] === 'NEG-MSG' || f[0] === 'NEG-ERR') && f[1] === 'big', 60_000)
      .then((f) => {
        answered = true
        return f
      })
    let oksBefore = 0
    for (let i = 0; !answered && i < 1000; i++) {
      const e = t.sign({ kind: 9, content: `bob ${i}` }, bobSk)
      bob.send(['EVENT', e])
      const ok = await bob.ok(e.id)
      expect(ok[2]).toBe(true)
      if (!answered) oksBefore++
    }
    // Built in one turn (as before), no OK of Bob's could come between NEG-OPEN and its answer.
    expect(oksBefore).toBeGreaterThanOrEqual(5)

    // And the set built in slices is the whole match: the founder needs every stored event.
    const need: string[] = []
    let reply = await first
    for (;;) {
      expect(reply[0]).toBe('NEG-MSG')
      const next = client.reconcile(String(reply[2]), undefined, (id) => need.push(id))
      if (next === null) break
      founder.send(['NEG-MSG', 'big', next])
      reply = await answer(founder, 'big')
    }
    expect(need.sort()).toEqual(stored.map((e) => e.id).sort())
  })
})

describe('a person past their work budget', () => {
  it('is not read until it refills, while another member is answered', async () => {
    // A budget the first frame outruns: 2 ms a second, next to nothing in hand.
    const t = await startTestHub({
      // No idle lending: the greedy person must wait whether or not Bob has sent anything yet.
      limits: {
        eventsPerSecond: 0,
        reqWorkMsPerSecond: 2,
        reqWorkBurstMs: 0.001,
        reqWorkLendAfterQuietMs: 0,
      },
    })
    const greedy = await t.member()
    const { sk: bobSk, client: bobClient } = await grantOwner(t)
    const bob = await bobClient()

    // The REQ's frame spends the greedy person's budget; the EVENT sent right behind it waits in
    // the socket until the budget has refilled (~0.5 s), where it was read and answered at once.
    const x = t.sign({ kind: 9, content: 'right behind the REQ' })
    greedy.send(['REQ', 'a', { kinds: [9], limit: 1 }])
    greedy.send(['EVENT', x])
    const order: string[] = []
    // Long waits: on a loaded machine the frames before (AUTH among them) take longer, and at
    // 2 ms a second each of their milliseconds is half a second before this person is read again.
    const greedyOk = greedy.ok(x.id, 50_000).then((f) => (order.push('greedy'), f))
    await greedy.next((f) => f[0] === 'EOSE' && f[1] === 'a', 50_000)
    const e = t.sign({ kind: 9, content: 'bob, another person' }, bobSk)
    bob.send(['EVENT', e])
    expect((await bob.ok(e.id))[2]).toBe(true)
    order.push('bob')
    // Not refused, only read later.
    expect((await greedyOk)[2]).toBe(true)
    expect(order).toEqual(['bob', 'greedy'])
  })
})
