import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { bytesToHex } from '@noble/hashes/utils.js'
import { publicKeyOf, signEvent } from '../../src/events/event.js'
import { loadNativeVerifier } from '../../src/verify/native.js'
import { RawClient } from '../helpers/raw-client.js'
import { runKith, setupKith, startHubProcess } from '../helpers/cli.js'
import { tempDir } from '../helpers/tmp.js'

const fixtures = new URL('../fixtures/tls/', import.meta.url).pathname

async function ownerHome() {
  const home = join(tempDir(), 'home')
  const sk = generateSecretKey()
  const r = await setupKith(['init', '--owner-key-stdin'], { home, input: bytesToHex(sk) })
  expect(r.code).toBe(0)
  return { home, sk }
}

describe('kith hub as a process', () => {
  it('keeps every event it said OK true to when SIGKILLed right after', async () => {
    const { home, sk } = await ownerHome()
    const db = join(home, 'hub.db')
    const hub = await startHubProcess(['--db', db], home)
    const c = await RawClient.connect(hub.url)
    expect((await c.auth(hub.url, sk))[2]).toBe(true)
    const events = Array.from({ length: 200 }, (_, i) =>
      signEvent(
        { kind: 9, created_at: 1_700_000_000 + i, tags: [['h', 'ops']], content: `m${i}` },
        sk,
      ),
    )
    for (const e of events) c.send(['EVENT', e])
    const oks = await Promise.all(events.map((e) => c.ok(e.id)))
    expect(oks.every((f) => f[2] === true)).toBe(true)
    hub.child.kill('SIGKILL')
    expect(await hub.stop()).toBe(null)

    const again = await startHubProcess(['--db', db], home)
    const c2 = await RawClient.connect(again.url)
    expect((await c2.auth(again.url, sk))[2]).toBe(true)
    const { events: stored } = await c2.req('all', { '#h': ['ops'], limit: 1000 })
    expect(stored).toHaveLength(200)
    expect(new Set(stored.map((e) => (e as { id: string }).id))).toEqual(
      new Set(events.map((e) => e.id)),
    )
    c.close()
    c2.close()
  })

  it('shuts down cleanly on SIGTERM with exit 0', async () => {
    const { home } = await ownerHome()
    const hub = await startHubProcess([], home)
    const c = await RawClient.connect(hub.url)
    // One SIGTERM (stop sends it): a second one while shutting down means "exit now" (143).
    expect(await hub.stop()).toBe(0)
    expect((await c.waitClosed()).code).toBe(1001)
    expect(hub.stderr()).toMatch(/SIGTERM, shutting down/)
  })

  it('says which verifier runs; KITH_VERIFY=wasm forces the wasm workers', async () => {
    const { home } = await ownerHome()
    const wasm = await startHubProcess([], home, { KITH_VERIFY: 'wasm' })
    await expect
      .poll(() => wasm.stderr())
      .toMatch(/kith hub: verifier: wasm \(KITH_VERIFY=wasm\) in up to \d+ worker/)
    const auto = await startHubProcess([], home, { KITH_VERIFY: 'auto' })
    const native = loadNativeVerifier() !== undefined
    await expect
      .poll(() => auto.stderr())
      .toMatch(
        native
          ? // Beside the main thread under load on two cores or more, else only on it (pool.ts).
            /kith hub: verifier: native libsecp256k1 \(.+\), (inline when idle, with up to \d+ worker thread\(s\) under load|inline on the main thread)$/m
          : /kith hub: verifier: wasm \(no libsecp256k1 found\)/,
      )
  })

  it('refuses a non-loopback bind without TLS, and says how to allow it', async () => {
    const { home } = await ownerHome()
    const r = await runKith(['hub', '--host', '0.0.0.0', '--port', '0'], { home })
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/refusing to serve plain ws:\/\/ on 0\.0\.0\.0/)
    expect(r.stderr).toMatch(/--tls-cert and --tls-key, or --plain/)
    const plain = await startHubProcess(['--host', '0.0.0.0', '--plain'], home)
    expect(plain.url).toMatch(/^ws:\/\/0\.0\.0\.0:\d+$/)
  })

  it('serves wss:// with --tls-cert/--tls-key and accepts AUTH for the wss URL', async () => {
    const { home, sk } = await ownerHome()
    const hub = await startHubProcess(
      ['--tls-cert', join(fixtures, 'cert.pem'), '--tls-key', join(fixtures, 'key.pem')],
      home,
    )
    expect(hub.url).toMatch(/^wss:\/\/127\.0\.0\.1:\d+$/)
    const c = await RawClient.connect(hub.url, { ca: readFileSync(join(fixtures, 'cert.pem')) })
    expect((await c.auth(hub.url, sk))[2]).toBe(true)
    // A plain ws:// relay tag does not name this hub.
    const c2 = await RawClient.connect(hub.url, { ca: readFileSync(join(fixtures, 'cert.pem')) })
    expect((await c2.auth(hub.url.replace('wss:', 'ws:'), sk))[2]).toBe(false)
    c.close()
    c2.close()
  })

  it('says which port is taken, and needs an owner', async () => {
    const { home } = await ownerHome()
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    const port = (blocker.address() as { port: number }).port
    const r = await runKith(['hub', '--port', String(port)], { home })
    blocker.close()
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(new RegExp(`port ${port} on 127.0.0.1 is in use`))
    const bare = join(tempDir(), 'bare')
    const noOwner = await runKith(['hub', '--port', '0'], { home: bare })
    expect(noOwner.code).toBe(3)
    const badOwner = await runKith(['hub', '--port', '0', '--owner', 'npub1nope'], { home: bare })
    expect(badOwner.code).toBe(1)
    expect(badOwner.stderr).toMatch(/--owner is not a valid npub/)
  })

  it('runs standalone with --owner and no KITH_HOME identity', async () => {
    const sk = generateSecretKey()
    const home = join(tempDir(), 'empty')
    const hub = await startHubProcess(
      ['--owner', publicKeyOf(sk), '--db', join(tempDir(), 'h.db')],
      home,
    )
    const c = await RawClient.connect(hub.url)
    expect((await c.auth(hub.url, sk))[2]).toBe(true)
    c.close()
  })
})
