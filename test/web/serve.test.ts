import { request } from 'node:http'
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync, gzipSync } from 'node:zlib'
import { describe, expect, it, onTestFinished } from 'vitest'
import {
  contentSecurityPolicy,
  hubWebHandler,
  loadWebFiles,
  startWebServer,
} from '../../src/web/serve.js'
import { parseServedBy } from '../../src/pairing/protocol/served-by.js'
import { runKith, setupKith, spawnKith, startNodeProcess } from '../helpers/cli.js'
import { startTestHub } from '../helpers/hub.js'
import { tempDir } from '../helpers/tmp.js'

const root = new URL('../../dist/web/app/', import.meta.url).pathname

interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: Buffer
}

/** A raw HTTP request with the Host header the test chooses (fetch cannot set it). */
function get(
  port: number,
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method, headers: { host: `127.0.0.1:${port}`, ...headers } },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
          }),
        )
      },
    )
    req.on('error', reject)
    req.end()
  })
}

async function serve(connect: string[] = ['ws://127.0.0.1:7447']) {
  const web = await startWebServer({
    port: 0,
    root,
    connectSources: () => connect,
    servedBy: () => ({ role: 'node', name: 'laptop', owner: 'ab'.repeat(32) }),
  })
  onTestFinished(() => web.close())
  return web
}

describe('the web app server of kith up (127.0.0.1)', () => {
  it('serves the app with a strict CSP naming exactly its origin and the fleet hubs', async () => {
    const web = await serve(['ws://127.0.0.1:7447', 'wss://hub.example.com', 'ws://[::1]:7447'])
    const page = await get(web.port, '/')
    expect(page.status).toBe(200)
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(page.body.toString()).toMatch(
      /<script type="module" crossorigin src="\/assets\/index-[\w-]+\.js"><\/script>/,
    )
    // No inline script anywhere in the page.
    expect(page.body.toString()).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/)
    const csp = page.headers['content-security-policy']
    expect(csp).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; font-src 'self'; " +
        "connect-src 'self' ws://127.0.0.1:7447 wss://hub.example.com; manifest-src 'self'; worker-src 'self'; " +
        "media-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    )
    expect(page.headers).toMatchObject({
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'cross-origin-opener-policy': 'same-origin',
      'cache-control': 'no-cache',
    })
  })

  it('refuses any Host but its own (DNS rebinding), and answers localhost too', async () => {
    const web = await serve()
    const rebound = await get(web.port, '/', { host: `attacker.example:${web.port}` })
    expect(rebound.status).toBe(421)
    expect(rebound.body.toString()).toMatch(/not attacker\.example/)
    expect((await get(web.port, '/', { host: '127.0.0.1' })).status).toBe(421)
    expect((await get(web.port, '/', { host: `localhost:${web.port}` })).status).toBe(200)
  })

  it('serves nothing outside the built app: no traversal, no listing, no source maps, no node state', async () => {
    const web = await serve()
    for (const path of [
      '/../package.json',
      '/%2e%2e/%2e%2e/package.json',
      '/assets/../../serve.js',
      '/assets/',
      '/assets',
      '/sw.js.map',
      '/node.sock',
      '/config.json',
      '/device.key',
    ])
      expect((await get(web.port, path)).status, path).toBe(404)
    expect((await get(web.port, '/%E0%A4%A')).status).toBe(400)
    const post = await get(web.port, '/', {}, 'POST')
    expect(post.status).toBe(405)
    expect(post.headers.allow).toBe('GET, HEAD')
  })

  it('hashed assets are immutable, gzipped on request, and revalidated by ETag', async () => {
    const web = await serve()
    const html = (await get(web.port, '/')).body.toString()
    const script = /src="(\/assets\/index-[\w-]+\.js)"/.exec(html)![1]!
    const asset = await get(web.port, script, { 'accept-encoding': 'gzip' })
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable')
    expect(asset.headers['content-encoding']).toBe('gzip')
    expect(gunzipSync(asset.body).equals(readFileSync(join(root, script)))).toBe(true)
    const again = await get(web.port, script, { 'if-none-match': String(asset.headers.etag) })
    expect(again.status).toBe(304)
    expect((await get(web.port, '/sw.js')).headers['cache-control']).toBe('no-cache')
    expect((await get(web.port, '/manifest.webmanifest')).headers['content-type']).toBe(
      'application/manifest+json',
    )
  })

  it(`the first load is at most 300 KB of JavaScript, gzipped`, () => {
    const html = readFileSync(join(root, 'index.html'), 'utf8')
    const first = [...html.matchAll(/(?:src|href)="(\/assets\/[\w-]+\.js)"/g)].map((m) => m[1]!)
    expect(first.length).toBeGreaterThan(0)
    const gz = first.reduce(
      (n, f) => n + gzipSync(readFileSync(join(root, f)), { level: 9 }).length,
      0,
    )
    expect(gz).toBeLessThanOrEqual(300 * 1024)
  })

  it('CSP names only what CSP can express (no IPv6 literal, no header injection)', () => {
    expect(
      contentSecurityPolicy(['ws://[::1]:7447', "ws://a.example; script-src 'unsafe-inline'"]),
    ).toMatch(/connect-src 'self'; manifest-src/)
  })
})

describe('the web app at a hub origin (kith hub)', () => {
  it('serves the app for the Host names of its AUTH URLs, and NIP-11 as before', async () => {
    const t = await startTestHub({
      http: hubWebHandler(loadWebFiles(root), { role: 'hub' }),
      publicUrls: ['ws://devbox.tail:7447'],
    })
    const port = t.hub.port
    const page = await get(port, '/')
    expect(page.status).toBe(200)
    expect(page.body.toString()).toMatch(/<title>Kith<\/title>/)
    const csp = String(page.headers['content-security-policy'])
    expect(csp).toMatch(/connect-src 'self' ws:\/\/devbox\.tail:7447 /)
    for (const u of [`ws://127.0.0.1:${port}`, `ws://localhost:${port}`]) expect(csp).toContain(u)
    expect((await get(port, '/', { host: 'devbox.tail:7447' })).status).toBe(200)
    expect((await get(port, '/', { host: `evil.example:${port}` })).status).toBe(421)
    const info = await get(port, '/', { accept: 'application/nostr+json' })
    expect(info.headers['content-type']).toBe('application/nostr+json')
    expect(JSON.parse(info.body.toString())).toMatchObject({ supported_nips: [1, 11, 42, 77] })
  })

  it('kith hub serves the plain page by default; --web serves the app and says whose machine it is', async () => {
    const home = tempDir()
    await setupKith(['init', '--name', 'x'], { home })
    const plain = spawnKith(['hub', '--port', '0'], home)
    const at = (await plain.waitFor(/listening on ws:\/\/127\.0\.0\.1:(\d+)/))[1]!
    expect((await get(Number(at), '/')).body.toString()).toMatch(/^This is a Kith hub/)
    expect(plain.output()).not.toMatch(/web app at/)
    plain.child.kill('SIGTERM')
    await plain.exit
    const hub = spawnKith(['hub', '--port', '0', '--web'], home)
    const url = (await hub.waitFor(/web app at (http:\/\/127\.0\.0\.1:\d+)\//))[1]!
    const page = await get(Number(new URL(url).port), '/')
    expect(page.body.toString()).toMatch(/<title>Kith<\/title>/)
    const { owner } = JSON.parse(readFileSync(join(home, 'config.json'), 'utf8')) as {
      owner: string
    }
    expect(parseServedBy(page.headers['kith-served-by'] as string)).toEqual({
      role: 'hub',
      name: 'x',
      owner,
    })
    hub.child.kill('SIGTERM')
    await hub.exit
    const both = await runKith(['hub', '--port', '0', '--web', '--no-web'], { home })
    expect(both.code).toBe(2)
    expect(both.stderr).toMatch(/--web and --no-web: choose one/)
  })
})

describe('kith up and kith open', { timeout: 60_000 }, () => {
  it('kith up serves the app (--web-port), kith open finds it; --no-web and a taken port do not stop the node', async () => {
    const home = tempDir()
    expect((await setupKith(['init', '--name', 'laptop'], { home })).code).toBe(0)
    const node = await startNodeProcess(home, ['--port', '0', '--web-port', '0'])
    const ready = JSON.parse(await node.waitFor(/"event":"ready"/)) as {
      web: string
      embedded: string
    }
    const port = Number(new URL(ready.web).port)
    const page = await get(port, '/')
    expect(String(page.headers['content-security-policy'])).toContain(
      `connect-src 'self' ${ready.embedded}`,
    )
    const config = JSON.parse(readFileSync(join(home, 'config.json'), 'utf8')) as {
      owner: string
    }
    expect(parseServedBy(page.headers['kith-served-by'] as string)).toEqual({
      role: 'node',
      name: 'laptop',
      owner: config.owner,
    })
    const open = await runKith(['open', '--print'], { home })
    expect(open.stdout.trim()).toBe(ready.web)

    // A headless machine: xdg-open fails (after looking around for a while, as the real one
    // does), or there is none. The URL comes first and it exits 0.
    const failing = join(tempDir(), 'bin')
    mkdirSync(failing)
    symlinkSync(process.execPath, join(failing, 'node'))
    writeFileSync(
      join(failing, 'xdg-open'),
      '#!/bin/sh\nsleep 1\necho "no method available" >&2\nexit 3\n',
    )
    chmodSync(join(failing, 'xdg-open'), 0o755)
    const absent = join(tempDir(), 'bin')
    mkdirSync(absent)
    symlinkSync(process.execPath, join(absent, 'node'))
    for (const path of [failing, absent]) {
      const headless = await runKith(['open'], { home, env: { PATH: path, DISPLAY: '' } })
      expect(headless.code).toBe(0)
      expect(headless.stdout.split('\n')[0]).toBe(ready.web)
      expect(headless.stderr).toMatch(/open the URL above/)
    }
    await node.stop()

    // The port is taken: the node runs all the same, and says why there is no app.
    const blocker = await startWebServer({
      port: 0,
      root,
      connectSources: () => [],
      servedBy: () => ({ role: 'node' }),
    })
    onTestFinished(() => blocker.close())
    const node3 = await startNodeProcess(home, ['--port', '0', '--web-port', String(blocker.port)])
    const line = await node3.waitFor(/web app not served/)
    expect(line).toMatch(/port \d+ on 127\.0\.0\.1 is in use; pick another with --web-port/)
    expect(JSON.parse(await node3.waitFor(/"event":"ready"/))).toMatchObject({ web: null })
    const none = await runKith(['open'], { home })
    expect(none.code).toBe(5)
    expect(none.stderr).toMatch(/does not serve the web app/)
    await node3.stop()
    // Another address only with TLS, or plain where the person says the network encrypts.
    const clear = await runKith(['up', '--port', '0', '--web-host', '0.0.0.0'], { home })
    expect(clear.code).toBe(2)
    expect(clear.stderr).toMatch(
      /in the clear: give --web-tls-cert and --web-tls-key, or --web-plain/,
    )
    const node5 = await startNodeProcess(home, [
      '--port',
      '0',
      '--web-port',
      '0',
      '--web-host',
      '0.0.0.0',
      '--web-plain',
      '--web-url',
      'http://devbox.tail',
    ])
    const wide = JSON.parse(await node5.waitFor(/"event":"ready"/)) as { web: string }
    const widePort = Number(new URL(wide.web).port)
    expect((await get(widePort, '/', { host: 'devbox.tail' })).status).toBe(200)
    expect((await get(widePort, '/', { host: `evil.example:${widePort}` })).status).toBe(421)
    await node5.stop()
    const node4 = await startNodeProcess(home, ['--port', '0', '--no-web'])
    expect(JSON.parse(await node4.waitFor(/"event":"ready"/))).toMatchObject({ web: null })
  })
})
