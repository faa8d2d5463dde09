import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { signEvent } from '../../src/events/event.js'
import { makeAuthTemplate, signAuthEvent } from '../../src/events/nip42.js'
import { startTestHub, workerPool } from '../helpers/hub.js'

const now = () => Math.floor(Date.now() / 1000)

describe('strangers cannot make the hub check signatures', () => {
  it('refuses a stranger’s AUTH on what is cheap to check, before any signature check', async () => {
    const t = await startTestHub()
    const c = await t.connect()
    const before = t.hub.stats().verified
    // A non-member key with a garbage signature: refused for membership, not for the signature.
    const stranger = signAuthEvent(t.url, c.challenge, generateSecretKey())
    const forged = { ...stranger, sig: 'ab'.repeat(64) }
    c.send(['AUTH', forged])
    expect(await c.ok(forged.id)).toEqual([
      'OK',
      forged.id,
      false,
      expect.stringMatching(/^restricted: /),
    ])
    // The owner's key but another connection's challenge, or a stale time: invalid, unchecked.
    const wrongChallenge = signAuthEvent(t.url, 'f'.repeat(32), t.ownerSk)
    c.send(['AUTH', { ...wrongChallenge, sig: 'ab'.repeat(64) }])
    expect((await c.ok(wrongChallenge.id))[3]).toMatch(/^invalid: AUTH challenge/)
    const stale = signEvent(makeAuthTemplate(t.url, c.challenge, now() - 3600), t.ownerSk)
    c.send(['AUTH', { ...stale, sig: 'ab'.repeat(64) }])
    expect((await c.ok(stale.id))[3]).toMatch(/^invalid: AUTH event is stale/)
    expect(t.hub.stats().verified).toBe(before)
  })

  it('closes a connection past its AUTH attempts', async () => {
    const t = await startTestHub({ limits: { maxAuthAttempts: 3 } })
    const c = await t.connect()
    for (let i = 0; i < 3; i++) {
      const e = signAuthEvent(t.url, c.challenge, generateSecretKey())
      c.send(['AUTH', e])
      expect((await c.ok(e.id))[3]).toMatch(/^restricted: /)
    }
    const fourth = signAuthEvent(t.url, c.challenge, t.ownerSk)
    c.send(['AUTH', fourth])
    expect(await c.ok(fourth.id)).toEqual([
      'OK',
      fourth.id,
      false,
      'rate-limited: more than 3 AUTH attempts on this connection',
    ])
    expect((await c.waitClosed()).code).toBe(1008)
  })

  it('checks at most maxAuthAttempts forged signatures per connection, and members are served meanwhile', async () => {
    const t = await startTestHub({
      verifier: await workerPool(1),
      limits: { maxAuthAttempts: 8 },
    })
    const member = await t.member()
    const verifiedBefore = t.hub.stats().verified
    // Strangers forging the owner's (public) key pass every cheap check: only the signature fails.
    const flooders = [await t.connect(), await t.connect(), await t.connect()]
    for (const c of flooders) {
      const good = signAuthEvent(t.url, c.challenge, t.ownerSk)
      for (let i = 0; i < 1000; i++) c.send(['AUTH', { ...good, sig: 'cd'.repeat(64) }])
    }
    const e = t.sign({ content: 'served during the flood' })
    member.send(['EVENT', e])
    expect(await member.ok(e.id)).toEqual(['OK', e.id, true, ''])
    for (const c of flooders) expect((await c.waitClosed()).code).toBe(1008)
    // Each flooder got 8 checks, not 1000; the member's event was one more.
    expect(t.hub.stats().verified - verifiedBefore).toBeLessThanOrEqual(3 * 8 + 1)
  })

  it('refuses a member connection’s EVENTs past its queue of signature checks with rate-limited:', async () => {
    const t = await startTestHub({
      verifier: await workerPool(1),
      limits: { maxPendingVerifications: 16 },
    })
    const c = await t.member()
    const events = Array.from({ length: 200 }, (_, i) => t.sign({ content: `burst ${i}` }))
    for (const e of events) c.send(['EVENT', e])
    const answers = await Promise.all(events.map((e) => c.ok(e.id)))
    const refused = answers.filter((f) => f[2] === false)
    expect(refused.length).toBeGreaterThan(0)
    expect(new Set(refused.map((f) => f[3]))).toEqual(
      new Set([
        'rate-limited: more than 16 events awaiting verification on this connection; wait for OKs',
      ]),
    )
    // Nothing accepted was lost: every OK true is stored.
    const accepted = answers.filter((f) => f[2] === true).length
    expect(t.hub.store.count()).toBe(accepted)
  })
})
