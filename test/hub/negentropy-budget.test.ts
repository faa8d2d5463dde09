import { describe, expect, it } from 'vitest'
import { nip77 } from 'nostr-tools'
import { startTestHub } from '../helpers/hub.js'
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
    const t = await startTestHub({ limits: { negMaxSessions: 4, negMaxSessionsPerPerson: 3 } })
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
    // The set it just built spent the budget: a second build is refused until it refills.
    c.send(['NEG-OPEN', 'n2', { kinds: [1] }, initiate()])
    const refused = await answer(c, 'n2')
    expect(refused[0]).toBe('NEG-ERR')
    expect(refused[2]).toMatch(/^rate-limited: work: /)
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
})
