import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import WebSocket from 'ws'
import { generateSecretKey } from 'nostr-tools/pure'
import { makeFleetSetting } from '../../src/events/e2e-setting.js'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { startHub } from '../../src/hub/server.js'
import { initIdentity } from '../../src/identity/keys.js'
import { PeerSync, type PeerRound } from '../../src/link/peer-sync.js'
import { RelayClient } from '../../src/link/relay-client.js'
import { connectRaw, startTestHub, type TestHub } from '../helpers/hub.js'
import { newKey, signTestGrant } from '../helpers/secrets.js'
import { startStandardRelay } from '../helpers/standard-relay.js'
import { tempDir } from '../helpers/tmp.js'
import { startInProcessNode } from '../helpers/in-process-node.js'

// kith-e2e/1, "Intake": a sealed fleet's hubs and nodes never take on, and so never pass on,
// a sealed kind in plaintext dated while the fleet sealed (issue 29, item 3).

const now = () => Math.floor(Date.now() / 1000)

/** True when some file in `dir` (the store, its -wal and -shm) holds `text`. */
function filesHold(dir: string, text: string): boolean {
  return readdirSync(dir, { withFileTypes: true }).some((f) =>
    f.isDirectory()
      ? filesHold(join(dir, f.name), text)
      : f.isFile() && readFileSync(join(dir, f.name)).includes(text),
  )
}

/** A hub of a fleet that turned sealing on 60 s ago, and a device granted before that. */
async function sealedFleet(t: TestHub) {
  const device = newKey()
  const founder = await t.member()
  const grant = signTestGrant(
    { subject: device.pk, role: 'device', fleet: t.owner },
    t.ownerSk,
    now() - 120,
  )
  const on = signEvent(makeFleetSetting(t.owner, true, now() - 60), t.ownerSk)
  for (const e of [grant, on]) {
    founder.send(['EVENT', e])
    expect((await founder.ok(e.id))[2]).toBe(true)
  }
  const client = await t.connect()
  expect((await client.auth(t.url, device.sk))[2]).toBe(true)
  const plain = (content: string, at = now()) =>
    signEvent({ kind: 9, created_at: at, tags: [['h', 'ops']], content }, device.sk)
  return { device, grant, on, client, plain }
}

describe('a sealed fleet takes no plaintext of sealed kinds', () => {
  it('a hub refuses a member’s plaintext message made after "on", before and after a restart; its files hold no sentinel', async () => {
    const t = await startTestHub()
    const { client, plain, device } = await sealedFleet(t)
    // Made before the fleet sealed: history stays plaintext and readable.
    const old = plain('from before the switch', now() - 90)
    client.send(['EVENT', old])
    expect((await client.ok(old.id))[2]).toBe(true)

    const sentinel = `sentinel-${Math.random().toString(36).slice(2)}`
    const leak = plain(sentinel)
    client.send(['EVENT', leak])
    const ok = await client.ok(leak.id)
    expect(ok[2]).toBe(false)
    expect(String(ok[3])).toMatch(/^invalid: plaintext/)
    expect(t.hub.store.getEvent(leak.id)).toBeUndefined()
    expect(filesHold(t.dir, sentinel)).toBe(false)
    client.close()

    // The settings are replayed from hub.db: a restarted hub refuses it too.
    await t.hub.close()
    const again = await startHub({
      port: 0,
      dbPath: join(t.dir, 'hub.db'),
      founder: t.owner,
      verifyWorkers: 0,
      log: () => {},
    })
    onTestFinished(() => again.close())
    const c2 = await connectRaw(again.url)
    expect((await c2.auth(again.url, device.sk))[2]).toBe(true)
    c2.send(['EVENT', leak])
    const second = await c2.ok(leak.id)
    expect(second[2]).toBe(false)
    expect(String(second[3])).toMatch(/^invalid: plaintext/)
    expect(filesHold(t.dir, sentinel)).toBe(false)
  })

  it('plaintext held by a relay a hub peers with does not come in through the peering', async () => {
    const t = await startTestHub({ limits: { eventsPerSecond: 0 } })
    const { plain, grant, on } = await sealedFleet(t)
    const hubKey = newKey()
    const hubGrant = signTestGrant(
      { subject: hubKey.pk, role: 'hub', fleet: t.owner, name: 'hub-b' },
      t.ownerSk,
      now() - 100,
    )
    const founder = await t.member()
    founder.send(['EVENT', hubGrant])
    expect((await founder.ok(hubGrant.id))[2]).toBe(true)

    // A plain relay knows nothing of sealing: a device kept from the setting posted there.
    const relay = await startStandardRelay({ nip77: true })
    const atRelay = await RelayClient.connect(new WebSocket(relay.url), { url: relay.url })
    onTestFinished(() => atRelay.close())
    const sentinel = `sentinel-${Math.random().toString(36).slice(2)}`
    const leak = plain(sentinel, now() - 5)
    for (const e of [grant, on, leak]) expect((await atRelay.publish(e)).ok).toBe(true)

    const rounds: PeerRound[] = []
    let first!: (r: PeerRound) => void
    const synced = new Promise<PeerRound>((r) => (first = r))
    const sync = new PeerSync({
      peerUrl: relay.url,
      localUrl: t.url,
      secretKey: hubKey.sk,
      store: t.hub.store,
      fleet: t.owner,
      log: () => {},
      onRound: (r) => {
        rounds.push(r)
        if (rounds.length === 1) first(r)
      },
    })
    sync.start()
    onTestFinished(() => sync.close())
    const round = await synced
    expect(round.refused).toBeGreaterThanOrEqual(1)
    expect(t.hub.store.getEvent(leak.id)).toBeUndefined()
    expect(filesHold(t.dir, sentinel)).toBe(false)
  })

  it('a node of a sealed fleet neither stores nor shows a plaintext message a hub hands it', async () => {
    const home = join(tempDir(), 'home')
    const ownerSk = generateSecretKey()
    initIdentity({ home, ownerSecret: ownerSk })
    const node = await startInProcessNode({ home, embedPort: 0, verifyWorkers: 0 })
    const fleet = publicKeyOf(ownerSk)
    const device = newKey()
    const grant = signTestGrant({ subject: device.pk, role: 'device', fleet }, ownerSk, now() - 120)
    const on = signEvent(makeFleetSetting(fleet, true, now() - 60), ownerSk)
    const seen: NostrEvent[] = []
    node.onChat((item) => seen.push(item.event))
    const sentinel = `sentinel-${Math.random().toString(36).slice(2)}`
    const leak = signEvent(
      { kind: 9, created_at: now(), tags: [['h', 'ops']], content: sentinel },
      device.sk,
    )
    await node.intake([leak, on, grant])
    expect(seen).toEqual([])
    expect(node.history({ channel: 'ops' })).toEqual([])
    expect(filesHold(home, sentinel)).toBe(false)
  })
})
