import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it, onTestFinished } from 'vitest'
import WebSocket, { WebSocketServer } from 'ws'
import { readConfig, writeConfig } from '../../src/identity/config.js'
import { initIdentity, loadIdentity } from '../../src/identity/keys.js'
import { ensureOwnDeviceGrant, openFleetNode } from '../../src/node/fleet.js'
import { setupKith } from '../helpers/cli.js'
import { startTestHub } from '../helpers/hub.js'
import { tempDir } from '../helpers/tmp.js'
import { startInProcessNode } from '../helpers/in-process-node.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))
const lie = 'restricted: revoked: this key’s grant has been revoked'

/**
 * A hub that lies: a proxy in front of a real hub that forwards everything both ways, except
 * that it answers every AUTH itself with `OK false "restricted: revoked…"`, as a hub does for a
 * removed device. `auths` counts the AUTHs it answered.
 */
async function lyingHub(upstreamUrl: string) {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise<void>((resolve) => server.once('listening', () => resolve()))
  const sockets = new Set<WebSocket>()
  let auths = 0
  server.on('connection', (client) => {
    const upstream = new WebSocket(upstreamUrl)
    sockets.add(client).add(upstream)
    const early: string[] = []
    upstream.on('open', () => {
      for (const f of early.splice(0)) upstream.send(f)
    })
    upstream.on('message', (data: Buffer) => {
      if (client.readyState === client.OPEN) client.send(data.toString('utf8'))
    })
    upstream.on('close', () => client.close())
    upstream.on('error', () => client.close())
    client.on('close', () => upstream.close())
    client.on('error', () => upstream.close())
    client.on('message', (data: Buffer) => {
      const frame = data.toString('utf8')
      const msg = JSON.parse(frame) as unknown[]
      if (msg[0] === 'AUTH' && typeof msg[1] === 'object') {
        auths++
        client.send(JSON.stringify(['OK', (msg[1] as { id: string }).id, false, lie]))
        return
      }
      if (upstream.readyState === upstream.OPEN) upstream.send(frame)
      else early.push(frame)
    })
  })
  onTestFinished(async () => {
    for (const s of sockets) s.terminate()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return {
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`,
    auths: () => auths,
  }
}

describe('a hub\'s "revoked" against the node\'s own grant book (issue 28, item 5)', () => {
  it('a hub that lies "revoked" ends only its link: the node keeps its agents and says so loudly', async () => {
    const t = await startTestHub()
    const liar = await lyingHub(t.url)
    const home = join(tempDir(), 'devbox')
    initIdentity({ home, name: 'devbox', ownerSecret: t.ownerSk })
    // The agent is added through the real hub (its grant reaches it); then the node's only hub
    // is the liar.
    writeConfig(home, { ...readConfig(home)!, hubs: [t.url] })
    const fleetNode = openFleetNode(loadIdentity(home))
    ensureOwnDeviceGrant(fleetNode, Math.floor(Date.now() / 1000))
    fleetNode.book.close()
    const add = await setupKith(['agent', 'add', 'bot', '--', process.execPath, fakeAgent], {
      home,
    })
    expect(add.code, add.stderr + add.stdout).toBe(0)
    writeConfig(home, { ...readConfig(home)!, hubs: [liar.url] })

    const lines: string[] = []
    const node = await startInProcessNode({ home, verifyWorkers: 0, log: (l) => lines.push(l) })
    await expect
      .poll(() => node.status().hubs.map((h) => h.state), { timeout: 20_000 })
      .toEqual(['revoked'])
    expect(liar.auths()).toBeGreaterThan(0)

    const status = node.status()
    // The node's own book shows its device standing: it was not removed, and its agent runs.
    expect(node.book.authorize(node.id.devicePubkey, Math.floor(Date.now() / 1000)).ok).toBe(true)
    expect(status.removed).toBeNull()
    expect(status.agents.map((a) => (a as { name: string }).name)).toEqual(['bot'])
    expect(status.disputedRevocations).toEqual([{ url: liar.url, message: lie }])
    const log = lines.join('\n')
    expect(log).toMatch(/WARNING: .* says this device is revoked .* grant standing/)
    expect(log).not.toMatch(/no longer hosted/)
    expect(log).not.toMatch(/removed from the fleet/)
  })
})
