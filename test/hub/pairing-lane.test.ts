import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js'
import { signEvent } from '../../src/events/event.js'
import { PairingLane } from '../../src/hub/pairing-lane.js'
import { startTestHub } from '../helpers/hub.js'

const pairingEvent = (
  pid: string,
  content = '{"t":"ack","mac":"00"}',
  extraTags: string[][] = [],
) =>
  signEvent(
    {
      kind: 24140,
      created_at: Math.floor(Date.now() / 1000),
      tags: [['d', pid], ...extraTags],
      content,
    },
    generateSecretKey(),
  )
const laneReq = (pid: string) => ['REQ', 'pair', { kinds: [24140], '#d': [pid] }]

describe('the hub pairing lane', () => {
  it('relays kind 24140 between two unauthenticated parties of one room, and stores nothing', async () => {
    const t = await startTestHub()
    const pid = bytesToHex(randomBytes(16))
    const a = await t.connect()
    const b = await t.connect()
    for (const c of [a, b]) {
      c.send(laneReq(pid))
      expect(await c.next((f) => f[1] === 'pair')).toEqual(['EOSE', 'pair'])
    }
    const e = pairingEvent(pid)
    a.send(['EVENT', e])
    expect(await a.ok(e.id)).toEqual(['OK', e.id, true, ''])
    expect(await b.next((f) => f[0] === 'EVENT')).toEqual(['EVENT', 'pair', e])
    expect(a.frames.some((f) => f[0] === 'EVENT')).toBe(false)
    expect(t.hub.store.count()).toBe(0)
    // Everything else still requires AUTH, on the same connection.
    expect((await a.req('other', { kinds: [9] })).end[2]).toMatch(/^auth-required/)
    const chat = t.sign({})
    a.send(['EVENT', chat])
    expect((await a.ok(chat.id))[3]).toMatch(/^auth-required/)
  })

  it('burns the room when a third party arrives, telling both parties', async () => {
    const t = await startTestHub()
    const pid = bytesToHex(randomBytes(16))
    const [a, b, c] = [await t.connect(), await t.connect(), await t.connect()]
    for (const x of [a, b]) {
      x.send(laneReq(pid))
      await x.next((f) => f[0] === 'EOSE')
    }
    c.send(laneReq(pid))
    expect(await c.next((f) => f[0] === 'CLOSED')).toEqual([
      'CLOSED',
      'pair',
      'restricted: pairing: another device tried to use this code; cancelled for safety',
    ])
    for (const x of [a, b])
      expect((await x.next((f) => f[0] === 'CLOSED'))[2]).toMatch(/another device/)
    const late = pairingEvent(pid)
    a.send(['EVENT', late])
    expect((await a.ok(late.id))[3]).toMatch(/^restricted: pairing: another device/)
  })

  it('refuses large frames, a second room per connection, bad ids, and floods', async () => {
    const t = await startTestHub()
    const pid = bytesToHex(randomBytes(16))
    const a = await t.connect()
    const big = pairingEvent(pid, 'x'.repeat(5000))
    a.send(['EVENT', big])
    expect((await a.ok(big.id))[3]).toMatch(/^invalid: pairing frames are at most 4096 bytes/)
    const first = pairingEvent(pid)
    a.send(['EVENT', first])
    expect((await a.ok(first.id))[2]).toBe(true)
    const other = pairingEvent(bytesToHex(randomBytes(16)))
    a.send(['EVENT', other])
    expect((await a.ok(other.id))[3]).toMatch(/serves one pairing only/)
    const noPid = signEvent(
      { kind: 24140, created_at: Math.floor(Date.now() / 1000), tags: [], content: '' },
      generateSecretKey(),
    )
    a.send(['EVENT', noPid])
    expect((await a.ok(noPid.id))[3]).toMatch(/one d tag/)
    const flood = Array.from({ length: 16 }, () => pairingEvent(pid))
    for (const e of flood) a.send(['EVENT', e])
    const answers = await Promise.all(flood.map((e) => a.ok(e.id)))
    expect(answers.filter((f) => String(f[3]).startsWith('rate-limited:')).length).toBeGreaterThan(
      0,
    )
  })

  it('expires rooms after five minutes (fake clock)', () => {
    let now = 0
    const lane = new PairingLane<string>(undefined, () => now)
    const burns: string[] = []
    const onBurn = (party: string) => burns.push(party)
    expect(lane.join('a', 'room', onBurn)).toBeUndefined()
    now = 5 * 60_000 + 1
    expect(lane.join('b', 'room', onBurn)).toBe('restricted: pairing: this code expired')
    // After both parties of a finished pairing left, the code is "already used".
    expect(lane.join('x', 'room2', onBurn)).toBeUndefined()
    expect(lane.join('y', 'room2', onBurn)).toBeUndefined()
    lane.drop('x')
    lane.drop('y')
    expect(lane.join('z', 'room2', onBurn)).toBe('restricted: pairing: this code was already used')
    expect(burns).toEqual([])
  })
})
