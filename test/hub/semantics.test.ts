import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf } from '../../src/events/event.js'
import { signGrant } from '../../src/grants/grant.js'
import { startTestHub } from '../helpers/hub.js'

describe('hub NIP-01 semantics', () => {
  it('serves stored matches newest first up to the limit, then EOSE, then live events', async () => {
    const t = await startTestHub({ limits: { defaultLimit: 3 } })
    const c = await t.member()
    const events = [10, 20, 30, 40].map((s) =>
      t.sign({ created_at: s, tags: [['h', 'ops']], content: `m${s}` }),
    )
    for (const e of events) c.send(['EVENT', e])
    for (const e of events) expect((await c.ok(e.id))[2]).toBe(true)

    const all = await c.req('all', { '#h': ['ops'] })
    expect(all.events).toEqual([events[3], events[2], events[1]])
    expect(all.end).toEqual(['EOSE', 'all'])
    expect((await c.req('lim', { limit: 1 })).events).toEqual([events[3]])
    expect((await c.req('zero', { since: 0, until: 10 })).events).toEqual([events[0]])
    expect((await c.req('or', { until: 10 }, { since: 40 })).events).toEqual([events[3], events[0]])

    const watcher = await t.member()
    await watcher.req('live', { '#h': ['ops'] }, { kinds: [7] })
    const live = t.sign({ tags: [['h', 'ops']], content: 'live' })
    const unrelated = t.sign({ tags: [['h', 'dev']], content: 'not for you' })
    c.send(['EVENT', unrelated])
    c.send(['EVENT', live])
    await c.ok(live.id)
    expect(await watcher.next((f) => f[0] === 'EVENT')).toEqual(['EVENT', 'live', live])
    expect(
      watcher.frames.some((f) => f[0] === 'EVENT' && (f[2] as { id: string }).id === unrelated.id),
    ).toBe(false)
  })

  it('stops live delivery after CLOSE', async () => {
    const t = await startTestHub()
    const c = await t.member()
    await c.req('a', { kinds: [9] })
    await c.req('b', { kinds: [9] })
    c.send(['CLOSE', 'a'])
    const e = t.sign({})
    c.send(['EVENT', e])
    await c.ok(e.id)
    expect(await c.next((f) => f[0] === 'EVENT')).toEqual(['EVENT', 'b', e])
    expect(c.frames.filter((f) => f[0] === 'EVENT' && f[1] === 'a')).toEqual([])
  })

  it('answers a duplicate with OK true and duplicate:, and stores it once', async () => {
    const t = await startTestHub()
    const c = await t.member()
    const e = t.sign({})
    c.send(['EVENT', e])
    expect(await c.ok(e.id)).toEqual(['OK', e.id, true, ''])
    c.send(['EVENT', e])
    expect(await c.ok(e.id)).toEqual(['OK', e.id, true, 'duplicate: already have this event'])
    expect(t.hub.store.count()).toBe(1)
  })

  it('keeps only the newest replaceable and addressable event', async () => {
    const t = await startTestHub()
    const c = await t.member()
    const p1 = t.sign({ kind: 0, created_at: 100, content: '{"name":"a"}' })
    const p2 = t.sign({ kind: 0, created_at: 200, content: '{"name":"b"}' })
    const a1 = t.sign({ kind: 30078, created_at: 100, tags: [['d', 'cfg']], content: '1' })
    const a2 = t.sign({ kind: 30078, created_at: 200, tags: [['d', 'cfg']], content: '2' })
    for (const e of [p2, p1, a1, a2]) c.send(['EVENT', e])
    expect(await c.ok(p2.id)).toEqual(['OK', p2.id, true, ''])
    expect(await c.ok(p1.id)).toEqual([
      'OK',
      p1.id,
      true,
      'duplicate: a newer version of this event is stored',
    ])
    expect((await c.ok(a2.id))[2]).toBe(true)
    expect((await c.req('p', { kinds: [0] })).events).toEqual([p2])
    expect((await c.req('a', { kinds: [30078] })).events).toEqual([a2])
  })

  it('fans ephemeral events out to live subscribers and never stores them', async () => {
    const t = await startTestHub()
    const sender = await t.member()
    const listener = await t.member()
    await listener.req('presence', { kinds: [24141] })
    const e = t.sign({ kind: 24141, content: 'online' })
    sender.send(['EVENT', e])
    expect(await sender.ok(e.id)).toEqual(['OK', e.id, true, ''])
    expect(await listener.next((f) => f[0] === 'EVENT')).toEqual(['EVENT', 'presence', e])
    expect((await listener.req('later', { kinds: [24141] })).events).toEqual([])
    expect(t.hub.store.count()).toBe(0)
  })

  it('delivers observer frames (24142) only to connections authenticated as their p', async () => {
    const t = await startTestHub()
    const deviceSk = generateSecretKey()
    const owner = await t.member()
    const grant = signGrant(
      { subject: publicKeyOf(deviceSk), role: 'device', fleet: t.owner },
      t.ownerSk,
      deviceSk,
      Math.floor(Date.now() / 1000),
    )
    owner.send(['EVENT', grant])
    expect((await owner.ok(grant.id))[2]).toBe(true)
    const device = await t.connect()
    expect((await device.auth(t.url, deviceSk))[2]).toBe(true)
    for (const c of [owner, device]) await c.req('frames', { kinds: [24142] })
    const frame = t.sign({ kind: 24142, tags: [['p', publicKeyOf(deviceSk)]], content: 'sealed' })
    owner.send(['EVENT', frame])
    expect((await owner.ok(frame.id))[2]).toBe(true)
    expect(await device.next((f) => f[0] === 'EVENT')).toEqual(['EVENT', 'frames', frame])
    // The owner's own connection matched the filter but is not the recipient.
    const marker = t.sign({ kind: 24141, content: 'after' })
    owner.send(['EVENT', marker])
    await owner.ok(marker.id)
    expect(
      owner.frames.some((f) => f[0] === 'EVENT' && (f[2] as { kind: number }).kind === 24142),
    ).toBe(false)
  })

  it('serves the NIP-11 document on the same port', async () => {
    const t = await startTestHub()
    const res = await fetch(t.url.replace('ws://', 'http://'), {
      headers: { accept: 'application/nostr+json' },
    })
    expect(res.headers.get('content-type')).toBe('application/nostr+json')
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    const info = (await res.json()) as {
      supported_nips: number[]
      limitation: Record<string, unknown>
    }
    expect(info.supported_nips).toEqual([1, 11, 42, 77])
    expect(info.limitation).toMatchObject({
      auth_required: true,
      max_message_length: 131072,
      max_subscriptions: 20,
      max_limit: 5000,
      default_limit: 500,
    })
    const plain = await fetch(t.url.replace('ws://', 'http://'))
    expect(await plain.text()).toMatch(/Kith hub/)
  })
})
