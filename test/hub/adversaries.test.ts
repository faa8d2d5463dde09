import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { signEvent } from '../../src/events/event.js'
import { connectRaw, startTestHub } from '../helpers/hub.js'
import { RawClient } from '../helpers/raw-client.js'

/** After each attack, an honest member must still be served. */
async function stillServes(t: Awaited<ReturnType<typeof startTestHub>>) {
  const honest = await t.member()
  const e = t.sign({ content: `still here ${Math.random()}` })
  honest.send(['EVENT', e])
  expect(await honest.ok(e.id)).toEqual(['OK', e.id, true, ''])
  honest.close()
}

describe('hub under misbehaving peers', () => {
  it('answers a bad id and a bad signature with invalid:', async () => {
    const t = await startTestHub()
    const c = await t.member()
    const e = t.sign({ content: 'original' })
    const badId = { ...e, content: 'tampered' }
    c.send(['EVENT', badId])
    expect(await c.ok(e.id)).toEqual([
      'OK',
      e.id,
      false,
      'invalid: event id does not match its content',
    ])
    const other = signEvent(
      { kind: 9, created_at: e.created_at, tags: [], content: 'original' },
      generateSecretKey(),
    )
    const badSig = { ...e, sig: other.sig }
    c.send(['EVENT', badSig])
    expect(await c.ok(e.id)).toEqual(['OK', e.id, false, 'invalid: bad signature'])
    expect(t.hub.store.count()).toBe(0)
    await stillServes(t)
  })

  it('refuses a malformed event naming the field', async () => {
    const t = await startTestHub()
    const c = await t.member()
    const e = t.sign({})
    c.send(['EVENT', { ...e, kind: 'nine' }])
    expect(await c.ok(e.id)).toEqual([
      'OK',
      e.id,
      false,
      'invalid: kind must be an integer 0-65535',
    ])
    c.send(['EVENT', 'not an event'])
    expect(await c.ok('')).toEqual(['OK', '', false, 'invalid: event must be a JSON object'])
  })

  it('answers an oversized frame with invalid: and keeps the connection', async () => {
    const t = await startTestHub({ limits: { maxFrameBytes: 4096 } })
    const c = await t.member()
    const e = t.sign({ content: 'x'.repeat(5000) })
    c.send(['EVENT', e])
    expect(await c.ok(e.id)).toEqual([
      'OK',
      e.id,
      false,
      expect.stringMatching(/^invalid: frame too large/),
    ])
    c.send(['REQ', 'x'.repeat(5000)])
    expect(await c.next((f) => f[0] === 'NOTICE')).toEqual([
      'NOTICE',
      expect.stringMatching(/frame too large/),
    ])
    expect(c.closed).toBeUndefined()
    await stillServes(t)
  })

  it('closes a connection whose frame exceeds the hard limit with 1009, and serves others', async () => {
    const t = await startTestHub({ limits: { maxFrameBytes: 4096, hardFrameBytes: 8192 } })
    const bystander = await t.member()
    const c = await connectRaw(t.url)
    c.send('x'.repeat(10_000))
    expect((await c.waitClosed()).code).toBe(1009)
    const e = t.sign({})
    bystander.send(['EVENT', e])
    expect((await bystander.ok(e.id))[2]).toBe(true)
  })

  it('answers malformed JSON, non-arrays, unknown verbs and binary frames with NOTICE', async () => {
    const t = await startTestHub()
    const c = await connectRaw(t.url)
    const notice = () => c.next((f) => f[0] === 'NOTICE')
    c.send('{"not json')
    expect(await notice()).toEqual(['NOTICE', 'invalid: malformed JSON'])
    c.send('{"a":1}')
    expect((await notice())[1]).toMatch(/first item is a verb/)
    c.send(['HELLO', 1])
    expect(await notice()).toEqual(['NOTICE', 'invalid: unknown verb "HELLO"'])
    c.ws.send(Buffer.from([1, 2, 3]), { binary: true })
    expect((await notice())[1]).toMatch(/binary frames/)
    c.send(['REQ'])
    expect((await notice())[1]).toMatch(/subscription id/)
    c.send(['CLOSE', 5])
    expect((await notice())[1]).toMatch(/CLOSE needs/)
    await stillServes(t)
  })

  it('refuses over-wide filters, too many filters and too many subscriptions with CLOSED', async () => {
    const t = await startTestHub({ limits: { maxSubscriptions: 2, maxFilters: 2 } })
    const c = await t.member()
    const wide = { authors: Array.from({ length: 1001 }, () => 'a'.repeat(64)) }
    expect((await c.req('w', wide)).end).toEqual([
      'CLOSED',
      'w',
      expect.stringMatching(/^invalid: filter too wide/),
    ])
    expect((await c.req('f', {}, {}, {})).end).toEqual([
      'CLOSED',
      'f',
      'invalid: REQ takes 1-2 filters',
    ])
    expect((await c.req('bad', { kinds: 'x' })).end[2]).toMatch(/^invalid: filter kinds/)
    expect((await c.req('s1', {})).end[0]).toBe('EOSE')
    expect((await c.req('s2', {})).end[0]).toBe('EOSE')
    expect((await c.req('s3', {})).end).toEqual([
      'CLOSED',
      's3',
      expect.stringMatching(/^error: too many subscriptions/),
    ])
    // Replacing an existing id is not a new subscription; closing one frees a slot.
    expect((await c.req('s2', { kinds: [1] })).end[0]).toBe('EOSE')
    c.send(['CLOSE', 's1'])
    expect((await c.req('s3', {})).end[0]).toBe('EOSE')
  })

  it('refuses events too far in the future, oversized content and too many tags', async () => {
    const t = await startTestHub({ limits: { maxContentBytes: 10, maxTags: 2 } })
    const c = await t.member()
    const future = t.sign({ created_at: Math.floor(Date.now() / 1000) + 3600 })
    const big = t.sign({ content: 'é'.repeat(6) })
    const tags = t.sign({
      tags: [
        ['a', '1'],
        ['b', '2'],
        ['c', '3'],
      ],
    })
    const old = t.sign({ created_at: 1000 })
    c.send(['EVENT', future])
    expect((await c.ok(future.id))[3]).toMatch(
      /^invalid: created_at is more than 900 s in the future/,
    )
    c.send(['EVENT', big])
    expect((await c.ok(big.id))[3]).toMatch(/^invalid: content is larger than 10 bytes/)
    c.send(['EVENT', tags])
    expect((await c.ok(tags.id))[3]).toMatch(/^invalid: more than 2 tags/)
    c.send(['EVENT', old])
    expect(await c.ok(old.id)).toEqual(['OK', old.id, true, ''])
  })

  it('rate-limits a key that floods with rate-limited:', async () => {
    const t = await startTestHub({ limits: { eventsPerSecond: 1, eventBurst: 3 } })
    const c = await t.member()
    const events = Array.from({ length: 5 }, (_, i) => t.sign({ content: `flood ${i}` }))
    for (const e of events) c.send(['EVENT', e])
    const oks = await Promise.all(events.map((e) => c.ok(e.id)))
    expect(oks.filter((f) => f[2] === true)).toHaveLength(3)
    expect(oks.filter((f) => f[2] === false).map((f) => f[3])).toEqual([
      expect.stringMatching(/^rate-limited: /),
      expect.stringMatching(/^rate-limited: /),
    ])
  })

  it('refuses events by non-members even on a member connection', async () => {
    const t = await startTestHub()
    const c = await t.member()
    const stranger = t.sign({ content: 'not yours' }, generateSecretKey())
    c.send(['EVENT', stranger])
    expect(await c.ok(stranger.id)).toEqual([
      'OK',
      stranger.id,
      false,
      expect.stringMatching(/^restricted: /),
    ])
  })

  it('refuses an AUTH event sent as EVENT', async () => {
    const t = await startTestHub()
    const c = await t.member()
    const auth = t.sign({ kind: 22242 })
    c.send(['EVENT', auth])
    expect((await c.ok(auth.id))[3]).toMatch(/^invalid: AUTH events/)
  })

  it('reaps connections that stop answering pings', async () => {
    const t = await startTestHub({ limits: { heartbeatMs: 50 } })
    const c = await RawClient.connect(t.url, { autoPong: false })
    const closed = await c.waitClosed()
    expect(closed.code).toBe(1006)
    await expect.poll(() => t.hub.connections()).toBe(0)
  })
})
