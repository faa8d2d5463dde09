import WebSocket from 'ws'
import { describe, expect, it } from 'vitest'
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js'
import { generateSecretKey } from 'nostr-tools/pure'
import { withConnectTicket } from '../../src/events/connect-ticket.js'
import { ConnectionRate } from '../../src/hub/connection-rate.js'
import { HubCall } from '../../src/link/hub-call.js'
import { startTestHub, type TestHub } from '../helpers/hub.js'
import { RawClient } from '../helpers/raw-client.js'

interface Upgrade {
  status: number
  ws?: WebSocket
  retryAfter?: string | undefined
}

/** One WebSocket upgrade from `localAddress`: opened, or the HTTP status the hub answered. */
function upgrade(url: string, localAddress = '127.0.0.1'): Promise<Upgrade> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { localAddress })
    ws.once('open', () => resolve({ status: 101, ws }))
    ws.once('unexpected-response', (req, res) => {
      resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] })
      req.destroy()
    })
    ws.once('error', reject)
  })
}

/** `n` upgrades from `localAddress` at once; the opened ones are closed again. */
async function flood(url: string, n: number, localAddress = '127.0.0.1'): Promise<Upgrade[]> {
  const answers = await Promise.all(Array.from({ length: n }, () => upgrade(url, localAddress)))
  for (const a of answers) a.ws?.terminate()
  return answers
}

const refused = (answers: Upgrade[]) => answers.filter((a) => a.status === 429)

async function post(t: TestHub, c: RawClient): Promise<unknown[]> {
  const e = t.sign({})
  c.send(['EVENT', e])
  return c.ok(e.id)
}

describe('connection rate per address', () => {
  it('answers a flood from one address 429 + Retry-After, while a member with a connect ticket from that address gets in and posts', async () => {
    // A slow refill: nothing the flood spent comes back while the test runs.
    const t = await startTestHub({
      limits: { connectionsPerSecondPerAddress: 0.05, connectionBurstPerAddress: 10 },
    })
    const answers = await flood(t.url, 40)
    expect(answers.filter((a) => a.status === 101)).toHaveLength(10)
    expect(refused(answers)).toHaveLength(30)
    expect(Number(refused(answers)[0]!.retryAfter)).toBeGreaterThanOrEqual(1)
    // The member without a ticket is one more connection from a flooded address...
    expect((await upgrade(t.url)).status).toBe(429)
    // ...with one, it is let in, is not charged, and authenticates and posts.
    const member = await RawClient.connect(withConnectTicket(t.url, t.ownerSk), {
      localAddress: '127.0.0.1',
    })
    expect(await member.auth(t.url, t.ownerSk)).toEqual(['OK', expect.any(String), true, ''])
    expect(await post(t, member)).toEqual(['OK', expect.any(String), true, ''])
    // Another address has its own bucket.
    expect((await upgrade(t.url, '127.0.0.9')).status).toBe(101)
    member.close()
  })

  it("a node's hub call carries its ticket and AUTHs for the bare URL", async () => {
    const t = await startTestHub({
      limits: { connectionsPerSecondPerAddress: 0.05, connectionBurstPerAddress: 2 },
    })
    expect(refused(await flood(t.url, 4))).toHaveLength(2)
    const call = await HubCall.open(withConnectTicket(t.url, t.ownerSk))
    expect(call.url).toBe(t.url)
    expect((await call.auth(t.ownerSk)).ok).toBe(true)
    call.close()
  })

  it("ignores a ticket from a stranger's key, a stale one and one for another hub", async () => {
    const t = await startTestHub({
      // Answered at once: this test is about which tickets count, not when a 429 comes.
      limits: {
        connectionsPerSecondPerAddress: 0.05,
        connectionBurstPerAddress: 2,
        overRateAnswerDelayMs: 0,
      },
    })
    expect(refused(await flood(t.url, 4))).toHaveLength(2)
    const stale = Math.floor(Date.now() / 1000) - 600
    for (const url of [
      withConnectTicket(t.url, generateSecretKey()),
      withConnectTicket(t.url, t.ownerSk, stale),
      withConnectTicket(t.url.replace(/:\d+$/, ':1'), t.ownerSk).replace(/:1\?/, `:${t.hub.port}?`),
      `${t.url}/?auth=bm90IGEgdGlja2V0`,
    ]) {
      expect((await upgrade(url)).status).toBe(429)
    }
    expect((await upgrade(withConnectTicket(t.url, t.ownerSk))).status).toBe(101)
  })

  it('gives a token back when a connection authenticates as a member', async () => {
    const t = await startTestHub({
      limits: { connectionsPerSecondPerAddress: 0.05, connectionBurstPerAddress: 2 },
    })
    // Without tickets, member after member from one address: each refunds its token.
    for (let i = 0; i < 5; i++) {
      const c = await RawClient.connect(t.url)
      expect((await c.auth(t.url, t.ownerSk))[2]).toBe(true)
      c.close()
    }
    // Strangers are charged: the burst goes and stays gone.
    expect(refused(await flood(t.url, 3))).toHaveLength(1)
  })

  it("keeps a ticketed connection when strangers from its address fill that address's room", async () => {
    const t = await startTestHub({
      limits: { maxUnauthenticatedPerAddress: 3, connectionsPerSecondPerAddress: 0 },
    })
    const member = await RawClient.connect(withConnectTicket(t.url, t.ownerSk))
    const strangers: RawClient[] = []
    for (let i = 0; i < 6; i++) strangers.push(await RawClient.connect(t.url))
    // The strangers displaced one another; the member, oldest of its address, is still here.
    expect((await strangers[0]!.waitClosed()).code).toBe(1013)
    expect(member.closed).toBeUndefined()
    expect((await member.auth(t.url, t.ownerSk))[2]).toBe(true)
    for (const s of strangers) s.close()
    member.close()
  })

  it('upgrades refused 429 displace no one already held', async () => {
    const t = await startTestHub({
      limits: {
        maxUnauthenticatedPerAddress: 3,
        connectionsPerSecondPerAddress: 0.05,
        connectionBurstPerAddress: 3,
      },
    })
    const held: RawClient[] = []
    for (let i = 0; i < 3; i++) held.push(await RawClient.connect(t.url))
    expect(refused(await flood(t.url, 10))).toHaveLength(10)
    // Were the refused ones placed before their upgrade was answered, they would have closed
    // the three held (1013), one per arrival.
    for (const c of held) {
      c.send(['REQ', 'still-there', { limit: 0 }])
      expect((await c.next((f) => f[1] === 'still-there'))[0]).toBe('CLOSED')
      expect(c.closed).toBeUndefined()
    }
    // A member's ticketed connection from that address still gets in, displacing the oldest.
    const member = await RawClient.connect(withConnectTicket(t.url, t.ownerSk))
    expect((await held[0]!.waitClosed()).code).toBe(1013)
    expect((await member.auth(t.url, t.ownerSk))[2]).toBe(true)
    for (const c of held) c.close()
    member.close()
  })

  it('holds an over-rate upgrade before its 429, answers it at once when displaced, and answers every held one on stop', async () => {
    const t = await startTestHub({
      limits: {
        connectionsPerSecondPerAddress: 0.05,
        connectionBurstPerAddress: 1,
        maxUnauthenticatedPerAddress: 3,
        // Longer than the test: only a displacement or the hub's stop answers them.
        overRateAnswerDelayMs: 60_000,
      },
    })
    const first = await upgrade(t.url)
    expect(first.status).toBe(101)
    const answered: number[] = []
    const over = (n: number) =>
      Array.from({ length: n }, () =>
        upgrade(t.url).then((a) => {
          answered.push(a.status)
          return a
        }),
      )
    const waiting = over(2)
    // A member's ticketed connection from that address gets in and posts meanwhile.
    const member = await RawClient.connect(withConnectTicket(t.url, t.ownerSk))
    expect((await member.auth(t.url, t.ownerSk))[2]).toBe(true)
    expect(await post(t, member)).toEqual(['OK', expect.any(String), true, ''])
    expect(answered).toEqual([])
    // Past the address's room for them (3), the oldest waiting one is displaced: it hears its
    // 429 now.
    const more = over(2)
    expect((await waiting[0]!).status).toBe(429)
    expect(answered).toEqual([429])
    // Stopping answers the rest, without waiting out their delay.
    await t.hub.close()
    const rest = await Promise.all([...waiting.slice(1), ...more])
    expect(rest.map((a) => a.status)).toEqual([429, 429, 429])
    first.ws?.terminate()
    member.close()
  })

  it('bounds the table of addresses it remembers', async () => {
    const t = await startTestHub({ limits: { connectionRateAddresses: 4 } })
    for (let i = 2; i < 14; i++) {
      expect((await upgrade(t.url, `127.0.3.${i}`)).status).not.toBe(0)
    }
    expect(t.hub.stats().rateAddresses).toBeLessThanOrEqual(5)
  })
})

describe('ConnectionRate', () => {
  it('refills at its rate, refunds, and says when to retry', () => {
    let now = 0
    const rate = new ConnectionRate({ perSecond: 10, burst: 20, maxAddresses: 100 }, () => now)
    for (let i = 0; i < 20; i++) expect(rate.take('a')).toBeUndefined()
    expect(rate.take('a')).toBe(1)
    rate.refund('a')
    expect(rate.take('a')).toBeUndefined()
    now += 100
    expect(rate.take('a')).toBeUndefined()
    expect(rate.take('a')).toBe(1)
    expect(rate.take('b')).toBeUndefined()
  })

  it('forgets idle addresses past its size, and shares one bucket when every address is busy', () => {
    let now = 0
    const rate = new ConnectionRate({ perSecond: 1, burst: 2, maxAddresses: 3 }, () => now)
    for (const a of ['a', 'b', 'c']) rate.take(a)
    // All three are in debt: newcomers share the overflow bucket (2 tokens), not one each.
    expect(rate.take('d')).toBeUndefined()
    expect(rate.take('e')).toBeUndefined()
    expect(rate.take('f')).toBe(1)
    expect(rate.size).toBeLessThanOrEqual(4)
    // Once refilled, the oldest is forgotten (it lost nothing) and a newcomer has its own bucket.
    now += 10_000
    for (let i = 0; i < 1000; i++) rate.take(`x${i}`)
    expect(rate.size).toBeLessThanOrEqual(4)
  })
})

describe('pairing rooms per address', () => {
  it('refuses an address past its share of rooms; other addresses still pair', async () => {
    const t = await startTestHub({
      limits: { maxPairingRoomsPerAddress: 3, connectionsPerSecondPerAddress: 0 },
    })
    const join = async (localAddress: string) => {
      const c = await RawClient.connect(t.url, { localAddress })
      c.send(['REQ', 'pair', { kinds: [24140], '#d': [bytesToHex(randomBytes(16))] }])
      return c.next((f) => f[1] === 'pair')
    }
    for (let i = 0; i < 3; i++) expect(await join('127.0.0.2')).toEqual(['EOSE', 'pair'])
    expect(await join('127.0.0.2')).toEqual([
      'CLOSED',
      'pair',
      expect.stringMatching(
        /^rate-limited: pairing: more than 3 pairings in progress from this address/,
      ),
    ])
    expect(await join('127.0.0.3')).toEqual(['EOSE', 'pair'])
    expect(t.hub.stats().laneRooms).toBe(4)
  })
})
