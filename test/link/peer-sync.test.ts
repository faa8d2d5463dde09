import { describe, expect, it, onTestFinished } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf, type NostrEvent } from '../../src/events/event.js'
import { Kind } from '../../src/events/kinds.js'
import { PeerSync, type PeerRound, type PeerSyncOptions } from '../../src/link/peer-sync.js'
import { makeRevocation } from '../../src/grants/revocation.js'
import { signEvent } from '../../src/events/event.js'
import { startTestHub, type TestHub } from '../helpers/hub.js'
import type { RawClient } from '../helpers/raw-client.js'
import { newKey, signTestGrant } from '../helpers/secrets.js'
import { startStandardRelay } from '../helpers/standard-relay.js'
import WebSocket from 'ws'
import { RelayClient } from '../../src/link/relay-client.js'

const now = () => Math.floor(Date.now() / 1000)

/** Three hubs of one fleet; B holds a founder-granted hub key. */
async function fleetOfThree() {
  const ownerSk = generateSecretKey()
  const a = await startTestHub({ ownerSk, limits: { eventsPerSecond: 0 } })
  const b = await startTestHub({ ownerSk, limits: { eventsPerSecond: 0 } })
  const c = await startTestHub({ ownerSk, limits: { eventsPerSecond: 0 } })
  const hubKey = newKey()
  const grant = signTestGrant(
    { subject: hubKey.pk, role: 'hub', fleet: a.owner, name: 'hub-b' },
    ownerSk,
    now() - 10,
  )
  const founderAtB = await b.member()
  founderAtB.send(['EVENT', grant])
  expect((await founderAtB.ok(grant.id))[2]).toBe(true)
  return { a, b, c, hubKey, ownerSk }
}

/** A bridge from `local` to `peerUrl`, stopped after the test; resolves its rounds as they end. */
function bridge(
  local: TestHub,
  peerUrl: string,
  secretKey: Uint8Array,
  roundMs?: number,
  extra: Partial<PeerSyncOptions> = {},
) {
  const rounds: PeerRound[] = []
  const lines: string[] = []
  let waiters: { n: number; resolve: (r: PeerRound) => void }[] = []
  let lineWaiters: { match: RegExp; resolve: (line: string) => void }[] = []
  const sync = new PeerSync({
    peerUrl,
    localUrl: local.url,
    secretKey,
    store: local.hub.store,
    ...extra,
    ...(roundMs === undefined ? {} : { roundMs }),
    log: (line) => {
      lines.push(line)
      lineWaiters = lineWaiters.filter((w) => {
        if (!w.match.test(line)) return true
        w.resolve(line)
        return false
      })
    },
    onRound: (r) => {
      rounds.push(r)
      waiters = waiters.filter((w) => {
        if (rounds.length < w.n) return true
        w.resolve(r)
        return false
      })
    },
  })
  sync.start()
  onTestFinished(() => sync.close())
  return {
    sync,
    /** Resolves once round `n` has ended (at once if it has). */
    round: (n: number) =>
      rounds.length >= n
        ? Promise.resolve(rounds[n - 1]!)
        : new Promise<PeerRound>((resolve) => waiters.push({ n, resolve })),
    /** The first round: the catch-up on connect. */
    synced: () =>
      rounds.length > 0
        ? Promise.resolve(rounds[0]!)
        : new Promise<PeerRound>((resolve) => waiters.push({ n: 1, resolve })),
    rounds,
    /** Resolves with the first log line (past or future) that matches. */
    logged: (match: RegExp) =>
      new Promise<string>((resolve) => {
        const seen = lines.find((l) => match.test(l))
        if (seen !== undefined) resolve(seen)
        else lineWaiters.push({ match, resolve })
      }),
  }
}

/** Every kind-9 event a member's subscription receives, counted per id. */
async function watch(t: TestHub) {
  const client = await t.member()
  const seen = new Map<string, number>()
  let waiters: { ids: string[]; resolve: () => void }[] = []
  client.ws.on('message', (data: Buffer) => {
    const f = JSON.parse(data.toString()) as unknown[]
    if (f[0] !== 'EVENT' || f[1] !== 'w') return
    const id = (f[2] as NostrEvent).id
    seen.set(id, (seen.get(id) ?? 0) + 1)
    waiters = waiters.filter((w) => {
      if (!w.ids.every((i) => seen.has(i))) return true
      w.resolve()
      return false
    })
  })
  await client.req('w', { kinds: [9] })
  return {
    client,
    seen,
    /** Resolves once every id has arrived. */
    has: (ids: string[]) =>
      ids.every((i) => seen.has(i))
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiters.push({ ids, resolve })),
  }
}

async function post(c: RawClient, t: TestHub, content: string): Promise<NostrEvent> {
  const e = t.sign({ kind: 9, tags: [['h', 'ops']], content })
  c.send(['EVENT', e])
  expect((await c.ok(e.id))[2]).toBe(true)
  return e
}

const idsOf = (t: TestHub) =>
  t.hub.store
    .query([{}], { defaultLimit: 100_000, maxLimit: 100_000 })
    .map((r) => r.id)
    .sort()

describe('hub-to-hub replication (kith hub --peer)', () => {
  it('carries a message A → B → C live, and after a partition all three hold the same set, each delivered once', async () => {
    const { a, b, c, hubKey } = await fleetOfThree()
    const toA = bridge(b, a.url, hubKey.sk)
    const toC = bridge(b, c.url, hubKey.sk)
    await Promise.all([toA.synced(), toC.synced()])
    const atA = await watch(a)
    const atC = await watch(c)
    const postA = await a.member()
    const postC = await c.member()

    const first = await post(postA, a, 'over two hops')
    await atC.has([first.id])

    // Cut B off from both, post on every side, heal.
    await toA.sync.close()
    await toC.sync.close()
    const sideA = [await post(postA, a, 'a1'), await post(postA, a, 'a2')]
    const sideC = [await post(postC, c, 'c1'), await post(postC, c, 'c2')]
    const sideB = [await post(await b.member(), b, 'b1')]
    const healedA = bridge(b, a.url, hubKey.sk)
    const healedC = bridge(b, c.url, hubKey.sk)
    const all = [first, ...sideA, ...sideB, ...sideC].map((e) => e.id)
    await Promise.all([atA.has(all), atC.has(all)])
    await Promise.all([healedA.synced(), healedC.synced()])

    expect(idsOf(a)).toEqual(idsOf(b))
    expect(idsOf(c)).toEqual(idsOf(b))
    for (const id of all) {
      expect(atA.seen.get(id)).toBe(1)
      expect(atC.seen.get(id)).toBe(1)
    }
  })

  it('brings a new hub grants made in one second, children fetched before parents, in its first round', async () => {
    const { a, b, hubKey, ownerSk } = await fleetOfThree()
    const founderAtA = await a.member()
    // 20 owners and a device under each, all signed in the same second: a REQ by ids returns
    // them by id within that second, so many a device grant comes before its owner's.
    const at = now() - 5
    const devices: ReturnType<typeof newKey>[] = []
    const grants: NostrEvent[] = []
    for (let i = 0; i < 20; i++) {
      const owner = newKey()
      const device = newKey()
      const ownerGrant = signTestGrant(
        { subject: owner.pk, role: 'owner', fleet: a.owner },
        ownerSk,
        at,
      )
      grants.push(
        ownerGrant,
        signTestGrant(
          { subject: device.pk, role: 'device', fleet: a.owner, parent: ownerGrant.id },
          owner.sk,
          at,
        ),
      )
      devices.push(device)
    }
    for (const g of grants) {
      founderAtA.send(['EVENT', g])
      expect((await founderAtA.ok(g.id))[2]).toBe(true)
    }
    const toA = bridge(b, a.url, hubKey.sk)
    const first = await toA.synced()
    expect(first.refused).toBe(0)
    // Every device can connect to the new hub at once, not after the refused grants' half hour.
    for (const d of devices) {
      const c = await b.connect()
      expect((await c.auth(b.url, d.sk))[2]).toBe(true)
    }
  })

  it('applies a revocation that arrives through a peer: the revoked key is cut off on the far hub', async () => {
    const { a, b, c, hubKey, ownerSk } = await fleetOfThree()
    const toA = bridge(b, a.url, hubKey.sk)
    const toC = bridge(b, c.url, hubKey.sk)
    await Promise.all([toA.synced(), toC.synced()])
    const device = newKey()
    const grant = signTestGrant(
      { subject: device.pk, role: 'device', fleet: a.owner },
      ownerSk,
      now() - 5,
    )
    const founderAtA = await a.member()
    founderAtA.send(['EVENT', grant])
    expect((await founderAtA.ok(grant.id))[2]).toBe(true)
    // The grant reaches C through B; then the device can authenticate there.
    const founderAtC = await c.member()
    const held = await founderAtC.req('g', { kinds: [Kind.Grant], '#p': [device.pk] })
    if (held.events.length === 0) await founderAtC.next((f) => f[0] === 'EVENT' && f[1] === 'g')
    const deviceAtC = await c.connect()
    expect((await deviceAtC.auth(c.url, device.sk))[2]).toBe(true)
    const revocation = signEvent(
      makeRevocation({ fleet: a.owner, keys: [device.pk] }, now()),
      ownerSk,
    )
    founderAtA.send(['EVENT', revocation])
    expect((await founderAtA.ok(revocation.id))[2]).toBe(true)
    const closed = await deviceAtC.waitClosed()
    expect(closed.reason).toMatch(/revoked/)
    expect(c.hub.store.getEvent(revocation.id)?.kind).toBe(Kind.Revocation)
  })

  it('needs the founder’s hub grant: an ungranted key is refused, and a hub key signs nothing itself', async () => {
    const { a, b, hubKey } = await fleetOfThree()
    const stranger = generateSecretKey()
    const refused = bridge(b, a.url, stranger)
    expect(await refused.logged(/refused this hub's key/)).toMatch(/kith hub grant/)
    expect(refused.rounds).toEqual([])
    const hubAtB = await b.connect()
    expect((await hubAtB.auth(b.url, hubKey.sk))[2]).toBe(true)
    const own = b.sign({ kind: 9, tags: [['h', 'ops']] }, hubKey.sk)
    hubAtB.send(['EVENT', own])
    const ok = await hubAtB.ok(own.id)
    expect(ok[2]).toBe(false)
    expect(String(ok[3])).toMatch(/^restricted: .*signs nothing but AUTH/)
    expect(publicKeyOf(hubKey.sk)).toBe(hubKey.pk)
  })

  it('peers with a plain NIP-77 relay: members’ events cross both ways, a stranger’s stop at the Kith hub', async () => {
    const { b, hubKey } = await fleetOfThree()
    const relay = await startStandardRelay({ nip77: true })
    const stranger = generateSecretKey()
    const atRelay = await RelayClient.connect(new WebSocket(relay.url), { url: relay.url })
    onTestFinished(() => atRelay.close())
    const before = b.sign({ kind: 9, tags: [['h', 'ops']], content: 'posted at the relay first' })
    const strangers = b.sign({ kind: 9, tags: [['h', 'ops']], content: 'not a member' }, stranger)
    for (const e of [before, strangers]) {
      expect((await atRelay.publish(e)).ok).toBe(true)
    }
    const atB = await watch(b)
    const toRelay = bridge(b, relay.url, hubKey.sk, 200)
    const first = await toRelay.synced()
    expect(first.refused).toBe(1)
    await atB.has([before.id])
    const live = b.sign({ kind: 9, tags: [['h', 'ops']], content: 'live at the relay' })
    expect((await atRelay.publish(live)).ok).toBe(true)
    await atB.has([live.id])
    const fromB = await post(await b.member(), b, 'posted at the hub')
    const crossed = () =>
      relay.store.query([{ ids: [fromB.id] }], { defaultLimit: 1, maxLimit: 1 }).length
    // Live at once, or by a later round: each round's end is an event to wait for.
    for (let n = 2; crossed() === 0 && n < 50; n++) await toRelay.round(n)
    expect(crossed()).toBe(1)
    expect(b.hub.store.getEvent(strangers.id)).toBeUndefined()
    expect(atB.seen.has(strangers.id)).toBe(false)
  })
  it('reconciles only the fleet with a plain relay, and does not fetch again what this hub refused', async () => {
    const { b, hubKey, ownerSk } = await fleetOfThree()
    const relay = await startStandardRelay({ nip77: true })
    const atRelay = await RelayClient.connect(new WebSocket(relay.url), { url: relay.url })
    onTestFinished(() => atRelay.close())
    // A device the founder admitted and then revoked: its events are the fleet's, and refused.
    const device = newKey()
    const grant = signTestGrant(
      { subject: device.pk, role: 'device', fleet: b.owner },
      ownerSk,
      now() - 5,
    )
    const revocation = signEvent(
      makeRevocation({ fleet: b.owner, keys: [device.pk] }, now()),
      ownerSk,
    )
    const founder = await b.member()
    for (const e of [grant, revocation]) {
      founder.send(['EVENT', e])
      expect((await founder.ok(e.id))[2]).toBe(true)
    }
    const members = [0, 1, 2].map((i) =>
      b.sign({ kind: 1, created_at: now() - 3600, content: `member ${i}` }),
    )
    const revoked = [0, 1, 2, 3, 4].map((i) =>
      b.sign({ kind: 1, created_at: now() - 3600, content: `revoked ${i}` }, device.sk),
    )
    // Strangers' events on a public relay: nothing this hub should fetch, ever.
    const strangers = Array.from({ length: 20 }, (_, i) =>
      b.sign({ kind: 1, created_at: now() - 3600, content: `stranger ${i}` }, generateSecretKey()),
    )
    for (const e of [...members, ...revoked, ...strangers])
      expect((await atRelay.publish(e)).ok).toBe(true)
    // Dated before the live subscriptions' overlap: only a round brings them.
    const toRelay = bridge(b, relay.url, hubKey.sk, 100, { fleet: b.owner })
    const first = await toRelay.synced()
    expect(first).toMatchObject({ need: 8, refused: 5 })
    for (const e of members) expect(b.hub.store.getEvent(e.id)).toBeDefined()
    // The refused ones are not asked for again next round (nor anything of the strangers').
    expect(await toRelay.round(2)).toMatchObject({ need: 0, refused: 0 })
  })

  it('fetches at most maxNeed ids a round; the rest come next round', async () => {
    const { b, hubKey } = await fleetOfThree()
    const relay = await startStandardRelay({ nip77: true })
    const atRelay = await RelayClient.connect(new WebSocket(relay.url), { url: relay.url })
    onTestFinished(() => atRelay.close())
    const events = [0, 1, 2].map((i) =>
      b.sign({ kind: 1, created_at: now() - 3600, content: `member ${i}` }),
    )
    for (const e of events) expect((await atRelay.publish(e)).ok).toBe(true)
    const toRelay = bridge(b, relay.url, hubKey.sk, 100, { fleet: b.owner, maxNeed: 2 })
    expect((await toRelay.synced()).need).toBe(2)
    expect((await toRelay.round(2)).need).toBe(1)
    for (const e of events) expect(b.hub.store.getEvent(e.id)).toBeDefined()
  })
})
