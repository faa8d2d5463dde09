import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { bytesToHex } from '@noble/hashes/utils.js'
import type { ChatItem } from '../../src/node/chat-store.js'
import { freePort, runKith, setupKith, startHubProcess, startNodeProcess } from '../helpers/cli.js'
import { history as nodeHistory, post } from '../helpers/node-chat.js'
import { tempDir } from '../helpers/tmp.js'
import { startStandardRelay } from '../helpers/standard-relay.js'
import WebSocket from 'ws'
import { signEvent, type NostrEvent } from '../../src/events/event.js'

/** Machines of one person share an owner key until pairing exists; each has its own KITH_HOME. */
const newOwner = () => bytesToHex(generateSecretKey())

/**
 * A temp dir, an owner key, a KITH_HOME for the hubs (run with --owner from it), and one
 * KITH_HOME per machine name, each initialised with that owner key. `addHubs` wires them up.
 */
async function setup(names: string[]) {
  const dir = tempDir()
  const owner = newOwner()
  const hubHome = join(dir, 'hubhome')
  await setupKith(['init', '--owner-key-stdin'], { home: hubHome, input: owner })
  const homes = names.map((n) => join(dir, n))
  for (const home of homes) await setupKith(['init', '--owner-key-stdin'], { home, input: owner })
  const addHubs = async (...urls: string[]) => {
    for (const home of homes) for (const url of urls) await setupKith(['hub', 'add', url], { home })
  }
  return { dir, owner, hubHome, homes, addHubs }
}

const history = (home: string, channel = 'ops') => nodeHistory(home, channel, 10_000)

const texts = (items: ChatItem[]) => items.map((i) => i.event.content)

async function send(home: string, text: string, channel = '#ops') {
  const r = await runKith(['send', channel, text, '--json'], { home })
  expect(r.code, r.stderr).toBe(0)
  return JSON.parse(r.stdout) as { id: string; queued: boolean; delivery: { ok: boolean } | null }
}

describe('kith up: nodes that lose nothing and duplicate nothing', { timeout: 90_000 }, () => {
  it('round-trips a message between two nodes through a hub, with names and roles', async () => {
    const dir = tempDir()
    const ownerHome = join(dir, 'hubhome')
    const sk = newOwner()
    await setupKith(['init', '--owner-key-stdin'], { home: ownerHome, input: sk })
    const hub = await startHubProcess(['--db', join(dir, 'hub.db')], ownerHome)
    const a = join(dir, 'laptop')
    const b = join(dir, 'devbox')
    for (const [home, name] of [
      [a, 'laptop'],
      [b, 'devbox'],
    ] as const) {
      await setupKith(['init', '--name', name, '--owner-key-stdin'], { home, input: sk })
      await setupKith(['hub', 'add', hub.url], { home })
    }
    const na = await startNodeProcess(a)
    const nb = await startNodeProcess(b)
    await na.waitFor(/linked to/)
    await nb.waitFor(/linked to/)
    const sent = await send(a, 'hello @devbox')
    expect(sent.delivery?.ok).toBe(true)
    await expect
      .poll(async () => texts(await history(b)), { timeout: 15_000 })
      .toEqual(['hello @devbox'])
    const [item] = await history(b)
    expect(item!.from).toMatchObject({ name: 'laptop', role: 'device' })
    const devbox = JSON.parse((await runKith(['whoami', '--json'], { home: b })).stdout) as {
      deviceHex: string
    }
    expect(item!.event.tags).toContainEqual(['p', devbox.deviceHex])
    // A threaded reply from the other side.
    const reply = await runKith(['send', '#ops', 'on it', '--reply', sent.id], { home: b })
    expect(reply.code).toBe(0)
    await expect
      .poll(async () => texts(await history(a)).sort(), { timeout: 15_000 })
      .toEqual(['hello @devbox', 'on it'])
    // Messages of the same second are ordered by id, so find the reply by its text.
    const replyItem = (await history(a)).find((i) => i.event.content === 'on it')!
    expect(replyItem.event.tags).toContainEqual(['e', sent.id, '', 'root'])
    const log = await runKith(['log', '#ops'], { home: a })
    expect(log.stdout).toMatch(/laptop \[device\]: hello @devbox/)
    expect(log.stdout).toMatch(/devbox \[device\]: ↳ on it/)
    // A thread's short id (as kith session list and kith log --thread show it) is enough.
    const short = await runKith(['send', '#ops', 'and done', '--reply', sent.id.slice(0, 8)], {
      home: b,
    })
    expect(short.stderr).toBe('')
    expect(short.code).toBe(0)
    await expect
      .poll(async () => (await history(a)).find((i) => i.event.content === 'and done')?.event.tags)
      .toContainEqual(['e', sent.id, '', 'root'])
    // A prefix no message here has is refused, naming the channel.
    const unknown = await runKith(['send', '#ops', 'nope', '--reply', '00000000'], { home: b })
    expect(unknown.code).not.toBe(0)
    expect(unknown.stderr).toMatch(/no message 00000000 is known in #ops/)
  })

  it('survives a hub SIGKILLed and restarted mid-conversation: nothing lost, nothing duplicated', async () => {
    const port = await freePort()
    const url = `ws://127.0.0.1:${port}`
    const { dir, hubHome, homes, addHubs } = await setup(['a', 'b'])
    const [a, b] = homes as [string, string]
    const db = join(dir, 'hub.db')
    let hub = await startHubProcess(['--db', db, '--port', String(port)], hubHome)
    await addHubs(url)
    const na = await startNodeProcess(a)
    const nb = await startNodeProcess(b)
    await na.waitFor(/linked to/)
    await nb.waitFor(/linked to/)
    for (let i = 1; i <= 5; i++) await send(a, `m${i}`)
    await expect.poll(async () => (await history(b)).length, { timeout: 15_000 }).toBe(5)
    hub.child.kill('SIGKILL')
    await hub.stop()
    // While the hub is down the messages wait in A's outbox.
    for (let i = 6; i <= 10; i++) expect((await send(a, `m${i}`)).queued).toBe(true)
    hub = await startHubProcess(['--db', db, '--port', String(port)], hubHome)
    const want = Array.from({ length: 10 }, (_, i) => `m${i + 1}`)
    await expect
      .poll(async () => texts(await history(b)).sort(), { timeout: 30_000 })
      .toEqual(want.sort())
    await expect
      .poll(async () => texts(await history(a)).sort(), { timeout: 30_000 })
      .toEqual(want.sort())
    const status = JSON.parse((await runKith(['status', '--json'], { home: a })).stdout) as {
      outbox: number
    }
    expect(status.outbox).toBe(0)
  })

  it('catches up on everything posted while it was offline, across several pages', async () => {
    const { dir, hubHome, homes, addHubs } = await setup(['a', 'b'])
    const [a, b] = homes as [string, string]
    const hub = await startHubProcess(['--db', join(dir, 'hub.db')], hubHome)
    await addHubs(hub.url)
    const na0 = await startNodeProcess(a)
    const nb = await startNodeProcess(b)
    await na0.waitFor(/linked to/)
    await nb.waitFor(/linked to/)
    await send(a, 'before')
    await expect.poll(async () => texts(await history(b)), { timeout: 30_000 }).toEqual(['before'])
    await nb.stop()
    // Through a's node, not a `kith send` each: this test is about b's catch-up.
    const gap = Array.from({ length: 25 }, (_, i) => `gap ${i}`)
    for (const t of gap) await post(a, 'ops', t)
    // Back with a page size of 10: the 25 missed messages take three pages.
    const nb2 = await startNodeProcess(b, ['--page-size', '10'])
    await nb2.waitFor(/linked to/, 30_000)
    await expect.poll(async () => (await history(b)).length, { timeout: 60_000 }).toBe(26)
    const got = await history(b)
    expect(new Set(got.map((i) => i.event.id)).size).toBe(26)
    expect(texts(got).sort()).toEqual(['before', ...gap].sort())
  })

  it('keeps the outbox across a SIGKILL of the sender and delivers it on the next kith up', async () => {
    const { dir, hubHome, homes, addHubs } = await setup(['a', 'b'])
    const [a, b] = homes as [string, string]
    const port = await freePort()
    const url = `ws://127.0.0.1:${port}`
    const db = join(dir, 'hub.db')
    let hub = await startHubProcess(['--db', db, '--port', String(port)], hubHome)
    await addHubs(url)
    await hub.stop()
    // With the daemon down, kith send writes to the outbox.
    const offline = await runKith(['send', '#ops', 'written while down'], { home: a })
    expect(offline.stdout).toMatch(/queued .* kith up is not running/)
    // With the daemon up but the hub down, sends queue too; then the sender is killed.
    const na = await startNodeProcess(a)
    expect((await send(a, 'queued in a live node')).queued).toBe(true)
    await na.stop('SIGKILL')
    const status = JSON.parse((await runKith(['status', '--json'], { home: a })).stdout) as {
      running: boolean
      outbox: number
    }
    // two messages, the device profile, the device grant made at kith init and the node's
    // push-sender announcement (kith-notify/1)
    expect(status).toMatchObject({ running: false, outbox: 5 })
    hub = await startHubProcess(['--db', db, '--port', String(port)], hubHome)
    const nb = await startNodeProcess(b)
    await nb.waitFor(/linked to/)
    const na2 = await startNodeProcess(a)
    await na2.waitFor(/linked to/)
    await expect
      .poll(async () => texts(await history(b)).sort(), { timeout: 20_000 })
      .toEqual(['queued in a live node', 'written while down'])
  })

  it('keeps messages flowing over the second hub when one of two is down', async () => {
    const { dir, hubHome, homes, addHubs } = await setup(['a', 'b'])
    const [a, b] = homes as [string, string]
    const h1 = await startHubProcess(['--db', join(dir, 'h1.db')], hubHome)
    const h2 = await startHubProcess(['--db', join(dir, 'h2.db')], hubHome)
    await addHubs(h1.url, h2.url)
    const na = await startNodeProcess(a)
    const nb = await startNodeProcess(b)
    await na.waitFor(new RegExp(`linked to ${h2.url}`))
    await nb.waitFor(new RegExp(`linked to ${h2.url}`))
    await send(a, 'both up')
    await h1.stop()
    await send(a, 'one down')
    await expect
      .poll(async () => texts(await history(b)).sort(), { timeout: 15_000 })
      .toEqual(['both up', 'one down'])
    const status = JSON.parse((await runKith(['status', '--json'], { home: a })).stdout) as {
      hubs: { url: string; state: string; outbox: number }[]
    }
    const down = status.hubs.find((h) => h.url === h1.url)!
    expect(down.state).not.toBe('live')
    expect(down.outbox).toBe(1)
  })
})

describe('a standard NIP-01 relay as an extra link', { timeout: 90_000 }, () => {
  it('carries the fleet’s messages when the Kith hub is down, and strangers’ events are dropped', async () => {
    const { dir, hubHome, homes, addHubs } = await setup(['a', 'b'])
    const [a, b] = homes as [string, string]
    const hub = await startHubProcess(['--db', join(dir, 'hub.db')], hubHome)
    const relay = await startStandardRelay()
    await addHubs(hub.url, relay.url)
    const na = await startNodeProcess(a)
    const nb = await startNodeProcess(b)
    for (const n of [na, nb]) {
      await n.waitFor(new RegExp(`${relay.url} sent no AUTH challenge`))
      await n.waitFor(new RegExp(`caught up with ${relay.url}`))
    }
    await hub.stop()
    await send(a, 'via the standard relay')
    // Anyone may write to an open relay; the nodes take only what the grant chains allow.
    const intruder = signEvent(
      {
        kind: 9,
        created_at: Math.floor(Date.now() / 1000),
        tags: [['h', 'ops']],
        content: 'intruder',
      },
      generateSecretKey(),
    )
    await publishRaw(relay.url, intruder)
    await expect
      .poll(async () => texts(await history(b)), { timeout: 15_000 })
      .toEqual(['via the standard relay'])
    await send(a, 'second')
    await expect
      .poll(async () => texts(await history(b)).sort(), { timeout: 15_000 })
      .toEqual(['second', 'via the standard relay'])
  })
})

/** Publishes one event to a relay as a plain client and waits for its OK. */
async function publishRaw(url: string, event: NostrEvent): Promise<void> {
  const ws = new WebSocket(url)
  await new Promise((resolve, reject) => {
    ws.once('open', resolve)
    ws.once('error', reject)
  })
  await new Promise<void>((resolve) => {
    ws.on('message', (d: Buffer) => {
      const m = JSON.parse(d.toString()) as unknown[]
      if (m[0] === 'OK' && m[1] === event.id) resolve()
    })
    ws.send(JSON.stringify(['EVENT', event]))
  })
  ws.close()
}
