import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import WebSocket, { WebSocketServer } from 'ws'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { Kind } from '../../src/events/kinds.js'
import { makeRevocation } from '../../src/grants/revocation.js'
import { readConfig, writeConfig } from '../../src/identity/config.js'
import { initIdentity } from '../../src/identity/keys.js'
import { KithNode } from '../../src/node/kith-node.js'
import { startTestHub, type TestHub } from '../helpers/hub.js'
import { newSecret, signTestGrant } from '../helpers/secrets.js'
import { tempDir } from '../helpers/tmp.js'
import { startInProcessNode } from '../helpers/in-process-node.js'

const now = () => Math.floor(Date.now() / 1000)

/**
 * A proxy in front of a real hub (`upstream`, set once the hub listens: the hub is told the
 * proxy's URL, which AUTH names) that forwards every frame both ways and counts the revocations
 * (kind 4141 EVENT frames) it passes to the node. With `nip11`, it also forwards the hub's NIP-11
 * document (so the node knows the hub reconciles); without, a plain GET finds nothing.
 */
async function countingProxy(nip11: boolean) {
  let upstreamUrl = ''
  const http = createServer((req, res) => {
    if (!nip11) {
      res.writeHead(404).end()
      return
    }
    fetch(upstreamUrl.replace('ws://', 'http://'), {
      headers: { accept: req.headers.accept ?? '' },
    })
      .then(async (r) =>
        res.writeHead(r.status, { 'content-type': 'application/nostr+json' }).end(await r.text()),
      )
      .catch(() => res.writeHead(502).end())
  })
  const server = new WebSocketServer({ server: http })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()))
  const sockets = new Set<WebSocket>()
  let revocations = 0
  server.on('connection', (client) => {
    const upstream = new WebSocket(upstreamUrl)
    sockets.add(client).add(upstream)
    const early: string[] = []
    upstream.on('open', () => {
      for (const f of early.splice(0)) upstream.send(f)
    })
    upstream.on('message', (data: Buffer) => {
      const frame = data.toString('utf8')
      const msg = JSON.parse(frame) as unknown[]
      if (msg[0] === 'EVENT' && (msg[2] as NostrEvent).kind === Kind.Revocation) revocations++
      if (client.readyState === client.OPEN) client.send(frame)
    })
    upstream.on('close', () => client.close())
    upstream.on('error', () => client.close())
    client.on('close', () => upstream.close())
    client.on('error', () => upstream.close())
    client.on('message', (data: Buffer) => {
      const frame = data.toString('utf8')
      if (upstream.readyState === upstream.OPEN) upstream.send(frame)
      else early.push(frame)
    })
  })
  onTestFinished(async () => {
    for (const s of sockets) s.terminate()
    await new Promise<void>((resolve) => server.close(() => resolve()))
    await new Promise<void>((resolve) => http.close(() => resolve()))
  })
  return {
    url: `ws://127.0.0.1:${(http.address() as AddressInfo).port}`,
    revocations: () => revocations,
    upstream: (url: string) => {
      upstreamUrl = url
    },
  }
}

/** `n` agents granted by the founder and revoked again: a grant and a revocation each. */
async function grantAndRevoke(t: TestHub, n: number, createdAt: number): Promise<NostrEvent[]> {
  const c = await t.member()
  const revocations: NostrEvent[] = []
  for (let i = 0; i < n; i++) {
    const agent = publicKeyOf(newSecret())
    const grant = signTestGrant(
      { subject: agent, role: 'agent', fleet: t.owner, name: `a${i}` },
      t.ownerSk,
      createdAt - 1,
    )
    const revocation = signEvent(
      makeRevocation({ fleet: t.owner, keys: [agent] }, createdAt),
      t.ownerSk,
    )
    for (const e of [grant, revocation]) {
      c.send(['EVENT', e])
      expect((await c.ok(e.id))[2]).toBe(true)
    }
    revocations.push(revocation)
  }
  c.close()
  return revocations
}

async function runUntilLive(home: string, log: string[] = []): Promise<KithNode> {
  const node = await startInProcessNode({ home, verifyWorkers: 0, log: (l) => log.push(l) })
  await expect
    .poll(() => node.status().hubs.map((h) => h.state), { timeout: 30_000 })
    .toEqual(['live'])
  return node
}

describe('the authority kinds are fetched by cursor, not whole on every connect (issue 30)', () => {
  it.each([
    ['reconciles (NIP-77)', true],
    ['pages from its cursor', false],
  ])(
    'a node reconnecting after new revocations receives only the new ones: it %s',
    async (_, nip11) => {
      const proxy = await countingProxy(nip11)
      const t = await startTestHub({ limits: { eventsPerSecond: 0 }, publicUrls: [proxy.url] })
      proxy.upstream(t.url)
      // Forty revocations from three hours ago, before the node first connects.
      await grantAndRevoke(t, 40, now() - 3 * 3600)
      const home = join(tempDir(), 'devbox')
      initIdentity({ home, name: 'devbox', ownerSecret: t.ownerSk })
      writeConfig(home, { ...readConfig(home)!, hubs: [proxy.url] })

      const first = await runUntilLive(home)
      expect(proxy.revocations()).toBe(40)
      await first.stop()

      // While it is away, three more revocations.
      const fresh = await grantAndRevoke(t, 3, now())
      const log: string[] = []
      const second = await runUntilLive(home, log)
      // Only the three new ones came on the reconnect, not the forty again.
      expect(proxy.revocations() - 40).toBe(3)
      for (const r of fresh) expect(second.book.event(r.id)).toBeDefined()
      expect(log.join('\n')).toMatch(
        nip11 ? /reconciled in \d+ rounds/ : /caught up with \S+: paged/,
      )
    },
  )
})
