import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { connectAuthed } from '../../scripts/nostr-client.js'
import { signEvent } from '../../src/events/event.js'
import { makeAuthTemplate, signAuthEvent } from '../../src/events/nip42.js'
import { connectRaw, startTestHub } from '../helpers/hub.js'

describe('NIP-42 AUTH', () => {
  it('lets a nostr-tools client authenticate as the owner, then publish and read', async () => {
    const t = await startTestHub()
    const relay = await connectAuthed(t.url, t.ownerSk)
    try {
      const event = t.sign({ content: 'hello from nostr-tools', tags: [['h', 'ops']] })
      await expect(relay.publish(event)).resolves.toBe('')
      const got = await new Promise<unknown[]>((resolve) => {
        const seen: unknown[] = []
        const sub = relay.subscribe([{ '#h': ['ops'] }], {
          onevent: (e) => seen.push(e),
          oneose: () => {
            sub.close()
            resolve(seen)
          },
        })
      })
      expect(JSON.parse(JSON.stringify(got))).toEqual([event])
    } finally {
      relay.close()
    }
  })

  it('sends a fresh challenge on every connection', async () => {
    const t = await startTestHub()
    const a = await connectRaw(t.url)
    const b = await connectRaw(t.url)
    expect(a.challenge).toMatch(/^[0-9a-f]{32}$/)
    expect(a.challenge).not.toBe(b.challenge)
  })

  it('refuses REQ and EVENT before AUTH with auth-required, never silence', async () => {
    const t = await startTestHub()
    const c = await connectRaw(t.url)
    const { end } = await c.req('s1', {})
    expect(end).toEqual(['CLOSED', 's1', expect.stringMatching(/^auth-required: /)])
    const e = t.sign({})
    c.send(['EVENT', e])
    expect(await c.ok(e.id)).toEqual(['OK', e.id, false, expect.stringMatching(/^auth-required: /)])
  })

  it('refuses a wrong relay URL, stale time, wrong challenge, wrong kind and bad signature', async () => {
    const t = await startTestHub()
    const c = await connectRaw(t.url)
    const now = Math.floor(Date.now() / 1000)
    const cases = [
      [signAuthEvent('ws://127.0.0.1:1', c.challenge, t.ownerSk), /^invalid: AUTH relay tag/],
      [signAuthEvent(t.url, c.challenge, t.ownerSk, now - 3600), /^invalid: AUTH event is stale/],
      [signAuthEvent(t.url, 'f'.repeat(32), t.ownerSk), /^invalid: AUTH challenge/],
      [
        signEvent({ ...makeAuthTemplate(t.url, c.challenge, now), kind: 1 }, t.ownerSk),
        /kind 22242/,
      ],
    ] as const
    for (const [event, reason] of cases) {
      c.send(['AUTH', event])
      expect(await c.ok(event.id)).toEqual(['OK', event.id, false, expect.stringMatching(reason)])
    }
    const good = signAuthEvent(t.url, c.challenge, t.ownerSk)
    const forged = { ...good, sig: signAuthEvent(t.url, c.challenge, generateSecretKey()).sig }
    c.send(['AUTH', forged])
    expect(await c.ok(forged.id)).toEqual(['OK', forged.id, false, 'invalid: bad signature'])
    // None of the refusals authenticated the connection.
    expect((await c.req('s', {})).end[2]).toMatch(/^auth-required/)
  })

  it('rejects a nostr-tools client whose key is not a member', async () => {
    const t = await startTestHub()
    await expect(connectAuthed(t.url, generateSecretKey())).rejects.toThrow(/^restricted: /)
  })

  it('refuses a non-member with restricted:', async () => {
    const t = await startTestHub()
    const c = await connectRaw(t.url)
    const ok = await c.auth(t.url, generateSecretKey())
    expect(ok).toEqual(['OK', expect.any(String), false, expect.stringMatching(/^restricted: /)])
    expect((await c.req('s', {})).end[2]).toMatch(/^auth-required/)
  })

  it('refuses an AUTH replayed on another connection', async () => {
    const t = await startTestHub()
    const a = await connectRaw(t.url)
    const auth = signAuthEvent(t.url, a.challenge, t.ownerSk)
    a.send(['AUTH', auth])
    expect((await a.ok(auth.id))[2]).toBe(true)
    const b = await connectRaw(t.url)
    b.send(['AUTH', auth])
    expect(await b.ok(auth.id)).toEqual(['OK', auth.id, false, expect.stringMatching(/challenge/)])
  })

  it('accepts every loopback alias of the bound address and declared --url values', async () => {
    const t = await startTestHub({ publicUrls: ['wss://hub.example.net'] })
    const port = t.hub.port
    for (const url of [`ws://localhost:${port}`, `ws://[::1]:${port}/`, 'wss://hub.example.net/']) {
      const c = await connectRaw(t.url)
      expect((await c.auth(url, t.ownerSk))[2]).toBe(true)
    }
  })
})
