import { connect as tcpConnect, type Socket } from 'node:net'
import { describe, expect, it } from 'vitest'
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js'
import { generateSecretKey } from 'nostr-tools/pure'
import { signEvent } from '../../src/events/event.js'
import { withConnectTicket } from '../../src/events/connect-ticket.js'
import { addressGroup } from '../../src/hub/admission.js'
import { startTestHub, type TestHub } from '../helpers/hub.js'
import { RawClient } from '../helpers/raw-client.js'

/** An idle stranger from `localAddress` (any 127.x address reaches a loopback hub). */
async function stranger(t: TestHub, localAddress = '127.0.0.2'): Promise<RawClient> {
  const c = await RawClient.connect(t.url, { localAddress })
  return c
}

/** A bare TCP connection that never even sends its WebSocket upgrade. */
function rawTcp(t: TestHub, localAddress = '127.0.0.2'): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = tcpConnect({ host: '127.0.0.1', port: t.hub.port, localAddress })
    s.once('connect', () => resolve(s))
    s.once('error', reject)
  })
}

/**
 * Strangers holding `perAddress` connections from each address, each in a pairing room of its
 * own, every one re-opened (and back in a room) as soon as the hub closes it.
 */
async function laneSquatters(t: TestHub, addresses: string[], perAddress: number) {
  let stopped = false
  let reopens = 0
  let waiters: { at: number; resolve: () => void }[] = []
  const live = new Set<RawClient>()
  const hold = async (localAddress: string): Promise<void> => {
    let c: RawClient
    try {
      c = await RawClient.connect(t.url, { localAddress })
    } catch {
      // Refused at accept: the attacker simply tries again, as a real one would.
      if (!stopped) setImmediate(() => void hold(localAddress))
      return
    }
    live.add(c)
    const pid = bytesToHex(randomBytes(16))
    c.send(['REQ', 'pair', { kinds: [24140], '#d': [pid] }])
    await c.next((f) => f[1] === 'pair').catch(() => undefined)
    void c.waitClosed().then(() => {
      live.delete(c)
      if (stopped) return
      void hold(localAddress).then(() => {
        reopens++
        waiters = waiters.filter((w) => {
          if (reopens < w.at) return true
          w.resolve()
          return false
        })
      })
    })
  }
  for (const a of addresses) for (let i = 0; i < perAddress; i++) await hold(a)
  return {
    /** Resolves once `n` more connections have been re-opened and joined a room. */
    reopened: (n: number) =>
      new Promise<void>((resolve) => waiters.push({ at: reopens + n, resolve })),
    stop: () => {
      stopped = true
      for (const c of live) c.close()
    },
  }
}

const closedSocket = (s: Socket) =>
  new Promise<void>((resolve) => {
    if (s.destroyed) resolve()
    s.once('close', () => resolve())
  })

describe('strangers cannot lock members out', () => {
  it('closes a connection that does not authenticate before its deadline', async () => {
    const t = await startTestHub({ limits: { authDeadlineMs: 300 } })
    const idle = await stranger(t)
    expect(await idle.waitClosed()).toEqual({
      code: 1008,
      reason: 'auth-required: authenticate within 0.3 s',
    })
    // A member that authenticates at once is not affected.
    const member = await t.member()
    const e = t.sign({})
    member.send(['EVENT', e])
    expect(await member.ok(e.id)).toEqual(['OK', e.id, true, ''])
  })

  it('drops sockets that never upgrade once their deadline passes', async () => {
    const t = await startTestHub({ limits: { authDeadlineMs: 300 } })
    const sockets = await Promise.all([rawTcp(t), rawTcp(t), rawTcp(t)])
    await Promise.all(sockets.map(closedSocket))
    expect(t.hub.stats().unauthenticated).toBe(0)
  })

  it("caps unauthenticated connections per address: a newcomer displaces that address's oldest", async () => {
    const t = await startTestHub({ limits: { maxUnauthenticatedPerAddress: 3 } })
    const first = await stranger(t)
    for (let i = 0; i < 2; i++) await stranger(t)
    const fourth = await stranger(t)
    expect(await first.waitClosed()).toEqual({
      code: 1013,
      reason: 'try again later: too many unauthenticated connections',
    })
    // Raw sockets count too.
    const raw = await rawTcp(t)
    expect(t.hub.stats().unauthenticated).toBe(3)
    raw.destroy()
    // Another address is untouched, and a member from it gets in.
    const member = await RawClient.connect(t.url, { localAddress: '127.0.0.3' })
    expect((await member.auth(t.url, t.ownerSk))[2]).toBe(true)
    expect(fourth.closed).toBeUndefined()
  })

  it('keeps room for members: strangers past the hub-wide cap displace the oldest stranger', async () => {
    const t = await startTestHub({
      limits: { maxUnauthenticated: 10, maxUnauthenticatedPerAddress: 100 },
    })
    const idle: RawClient[] = []
    for (let i = 0; i < 10; i++) idle.push(await stranger(t, `127.0.0.${2 + (i % 5)}`))
    expect(t.hub.stats().unauthenticated).toBe(10)
    // A member arrives while strangers hold every unauthenticated slot: it gets in.
    const member = await t.member()
    expect(await idle[0]!.waitClosed()).toEqual({
      code: 1013,
      reason: 'try again later: too many unauthenticated connections',
    })
    const e = t.sign({})
    member.send(['EVENT', e])
    expect(await member.ok(e.id)).toEqual(['OK', e.id, true, ''])
    expect(t.hub.stats().unauthenticated).toBeLessThanOrEqual(10)
  })

  it('gives a pairing-lane connection until its room expires, and pairing still works', async () => {
    const t = await startTestHub({ limits: { authDeadlineMs: 300 } })
    const pid = bytesToHex(randomBytes(16))
    const a = await t.connect()
    const b = await t.connect()
    for (const c of [a, b]) {
      c.send(['REQ', 'pair', { kinds: [24140], '#d': [pid] }])
      expect(await c.next((f) => f[1] === 'pair')).toEqual(['EOSE', 'pair'])
    }
    // A stranger that connected with them is closed at the deadline...
    const idle = await stranger(t)
    expect((await idle.waitClosed()).code).toBe(1008)
    // ...while the two parties, past that deadline, still relay.
    const e = signEvent(
      { kind: 24140, created_at: Math.floor(Date.now() / 1000), tags: [['d', pid]], content: '{}' },
      generateSecretKey(),
    )
    a.send(['EVENT', e])
    expect(await a.ok(e.id)).toEqual(['OK', e.id, true, ''])
    expect(await b.next((f) => f[0] === 'EVENT')).toEqual(['EVENT', 'pair', e])
  })

  it('strangers re-opening pairing-room connections from many addresses never evict a member', async () => {
    const t = await startTestHub({
      limits: { maxUnauthenticated: 24, maxUnauthenticatedPerAddress: 8 },
    })
    const attack = await laneSquatters(t, ['127.0.0.2', '127.0.0.3', '127.0.0.4'], 8)
    expect(t.hub.stats().unauthenticated).toBe(24)
    for (let i = 0; i < 5; i++) {
      const member = await RawClient.connect(t.url, { localAddress: '127.0.0.1' })
      // The strangers answer every eviction by re-opening; the member answers once they have.
      await attack.reopened(1)
      expect(await member.auth(t.url, t.ownerSk)).toEqual(['OK', expect.any(String), true, ''])
      expect(member.closed).toBeUndefined()
      member.close()
    }
    attack.stop()
  })

  it("strangers filling the member's own address (a browser tab on its machine) do not lock it out", async () => {
    const t = await startTestHub({
      limits: { maxUnauthenticated: 24, maxUnauthenticatedPerAddress: 16 },
    })
    const attack = await laneSquatters(t, ['127.0.0.1'], 16)
    for (let i = 0; i < 5; i++) {
      // Its address is over its connection rate (429s): the member's connect ticket gets it by.
      const member = await RawClient.connect(withConnectTicket(t.url, t.ownerSk), {
        localAddress: '127.0.0.1',
      })
      await attack.reopened(1)
      expect(await member.auth(t.url, t.ownerSk)).toEqual(['OK', expect.any(String), true, ''])
      expect(member.closed).toBeUndefined()
      member.close()
    }
    attack.stop()
  })

  it('groups IPv6 addresses by /64 and unmaps IPv4', () => {
    expect(addressGroup('::ffff:10.1.2.3')).toBe('10.1.2.3')
    expect(addressGroup('2001:db8:0:1::5')).toBe('2001:db8:0:1::/64')
    expect(addressGroup('2001:db8:0:1:aaaa:bbbb:cccc:dddd')).toBe('2001:db8:0:1::/64')
    expect(addressGroup('::1')).toBe('0:0:0:0::/64')
  })
})
