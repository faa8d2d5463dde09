import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { KithError } from '../errors.js'
import { allowedRelayUrls, isLoopbackHost } from '../hub/urls.js'
import { formatServedBy, servedByHeader, type ServedBy } from '../pairing/protocol/served-by.js'

/**
 * The web app's static server: the files Vite built into dist/web/app, read once at start and
 * served from memory (nothing else on disk is reachable, and there is no directory listing),
 * with a strict Content-Security-Policy. It serves no key, no node state and no proxy to the
 * control socket: the app is a device of its own and talks to the fleet's hubs itself.
 */

/** Where `npm run build` puts the app, next to this module in dist/web. */
export const defaultWebRoot = fileURLToPath(new URL('./app/', import.meta.url))

/** Default port of the app served by `kith up` (the embedded hub is 7447). */
export const defaultWebPort = 7448

/** Hashed file names (assets/…-HASH.ext) never change: browsers keep them a year. */
const immutableCache = 'public, max-age=31536000, immutable'

interface WebFile {
  body: Buffer
  gzip: Buffer | undefined
  type: string
  etag: string
  cache: string
}

const types: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.webmanifest': 'application/manifest+json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.wasm': 'application/wasm',
}

function typeOf(path: string): string | undefined {
  const dot = path.lastIndexOf('.')
  return dot < 0 ? undefined : types[path.slice(dot)]
}

/** The built app, by URL path. Throws KithError('not-found') when it was not built. */
export function loadWebFiles(root: string = defaultWebRoot): Map<string, WebFile> {
  const files = new Map<string, WebFile>()
  const walk = (dir: string) => {
    let names: string[]
    try {
      names = readdirSync(dir)
    } catch (cause) {
      throw new KithError('not-found', `the web app is not built (${dir}): run npm run build`, {
        cause,
      })
    }
    for (const name of names) {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) {
        walk(path)
        continue
      }
      const urlPath = `/${relative(root, path).split(sep).join('/')}`
      const type = typeOf(urlPath)
      // Source maps and anything of an unknown type stay on disk.
      if (type === undefined) continue
      const body = readFileSync(path)
      const gzip = /^(text|application\/(json|manifest|wasm)|image\/svg)/.test(type)
        ? gzipSync(body, { level: 9 })
        : undefined
      files.set(urlPath, {
        body,
        gzip: gzip !== undefined && gzip.length < body.length ? gzip : undefined,
        type,
        etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
        cache: urlPath.startsWith('/assets/')
          ? immutableCache
          : urlPath.startsWith('/icons/')
            ? 'public, max-age=86400'
            : 'no-cache',
      })
    }
  }
  walk(root)
  if (!files.has('/index.html'))
    throw new KithError('not-found', `the web app is not built (${root}): run npm run build`)
  return files
}

/** A ws:// or wss:// source CSP can name (CSP has no syntax for IPv6 literals or zones). */
function cspSource(url: string): string | undefined {
  return /^wss?:\/\/[a-z0-9.-]+(:\d{1,5})?(\/[a-z0-9._~/-]*)?$/i.test(url) ? url : undefined
}

/**
 * The Content-Security-Policy of every page: scripts, styles, images and the manifest from this
 * origin only (no inline script or style, nothing from a CDN), connections to this origin and the
 * fleet's hubs.
 */
export function contentSecurityPolicy(connect: readonly string[]): string {
  const sources = [...new Set(connect.map(cspSource).filter((s) => s !== undefined))]
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' blob: data:",
    "font-src 'self'",
    `connect-src 'self' ${sources.join(' ')}`.trim(),
    "manifest-src 'self'",
    "worker-src 'self'",
    "media-src 'self' blob:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ')
}

/** What one web server is: the hosts it answers for, the hubs its pages may reach, whose it is. */
export interface WebSite {
  /**
   * The Host headers (host[:port], lowercase) this server answers; any other is refused with 421,
   * so a DNS-rebound name cannot make a page of another site same-origin with the app.
   */
  allowedHosts: () => ReadonlySet<string>
  /** The hub URLs the page may connect to, besides its own origin. */
  connectSources: () => readonly string[]
  /** Whose machine this is (the `kith-served-by` header the pairing screen checks). */
  servedBy: () => ServedBy
}

/** The hosts of URLs as a Host header names them (URL drops default ports, as browsers do). */
export function hostsOf(urls: readonly string[]): Set<string> {
  const hosts = new Set<string>()
  for (const u of urls) {
    try {
      hosts.add(new URL(u).host.toLowerCase())
    } catch {
      // Not a URL: it names no host this server answers for.
    }
  }
  return hosts
}

function plain(res: ServerResponse, status: number, text: string, headers: object = {}): void {
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
    ...headers,
  })
  res.end(`${text}\n`)
}

/**
 * A request handler serving `files` for `site`. Returns false for what it does not serve
 * (so a hub can answer it), true once it has answered.
 */
export function makeWebHandler(
  files: ReadonlyMap<string, WebFile>,
  site: WebSite,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const host = (req.headers.host ?? '').toLowerCase()
    if (!site.allowedHosts().has(host)) {
      plain(
        res,
        421,
        `This server answers for ${[...site.allowedHosts()].join(', ')}, not ${host || 'a request without Host'}.`,
      )
      return true
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      plain(res, 405, 'Only GET and HEAD.', { allow: 'GET, HEAD' })
      return true
    }
    let path: string
    try {
      path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)
    } catch {
      // A malformed escape names no file.
      plain(res, 400, 'Bad path.')
      return true
    }
    if (path === '/') path = '/index.html'
    const file = files.get(path)
    if (file === undefined) {
      plain(res, 404, 'Not found.')
      return true
    }
    const headers: Record<string, string> = {
      'content-type': file.type,
      'cache-control': file.cache,
      etag: file.etag,
      vary: 'Accept-Encoding',
      'content-security-policy': contentSecurityPolicy(site.connectSources()),
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'x-frame-options': 'DENY',
      'cross-origin-opener-policy': 'same-origin',
      'cross-origin-resource-policy': 'same-origin',
      'permissions-policy': 'camera=(self), microphone=(), geolocation=(), payment=(), usb=()',
      [servedByHeader]: formatServedBy(site.servedBy()),
    }
    if (req.headers['if-none-match'] === file.etag) {
      res.writeHead(304, headers)
      res.end()
      return true
    }
    const gzip = file.gzip !== undefined && /\bgzip\b/.test(req.headers['accept-encoding'] ?? '')
    const body = gzip ? file.gzip! : file.body
    if (gzip) headers['content-encoding'] = 'gzip'
    headers['content-length'] = String(body.length)
    res.writeHead(200, headers)
    res.end(req.method === 'HEAD' ? undefined : body)
    return true
  }
}

export interface WebServer {
  url: string
  port: number
  close(): Promise<void>
}

/** A non-loopback address serves the app over TLS, or plain only where the person said so. */
export function checkWebAddress(host: string, tls: boolean, plain: boolean): void {
  if (isLoopbackHost(host) || tls || plain) return
  throw new KithError(
    'usage',
    `serving the web app on ${host} would send this device's pages in the clear: give --web-tls-cert ` +
      'and --web-tls-key, or --web-plain on a network that already encrypts (a tailnet)',
  )
}

/**
 * The app served by `kith up`: on 127.0.0.1 by default, or on an address the person chooses
 * (`--web-host`, with TLS or on a network that already encrypts), so a phone loads it from a
 * machine of its person rather than from a hub someone else runs. Answers only the Host names of
 * its own addresses and `urls`, and lets the page connect to `connectSources()` (the node's hubs).
 */
export async function startWebServer(opts: {
  port: number
  connectSources: () => readonly string[]
  servedBy: () => ServedBy
  /** Address to bind (default 127.0.0.1). */
  host?: string
  /** Other URLs the app is reached by (a tailnet name, a proxy): their Host names are answered. */
  urls?: readonly string[]
  tls?: { cert: Buffer; key: Buffer }
  /** Serve plain http on a non-loopback address (a network that already encrypts: a tailnet). */
  plain?: boolean
  root?: string
}): Promise<WebServer> {
  const host = opts.host ?? '127.0.0.1'
  checkWebAddress(host, opts.tls !== undefined, opts.plain === true)
  const files = loadWebFiles(opts.root)
  let port = opts.port
  // The same names a hub takes AUTH for on that address (loopback aliases, every interface of a
  // wildcard bind), plus the URLs the person declared.
  const hosts = () =>
    hostsOf(
      allowedRelayUrls({
        host,
        port,
        tls: opts.tls !== undefined,
        publicUrls: (opts.urls ?? []).map((u) => u.replace(/^http/, 'ws')),
      }),
    )
  const handle = makeWebHandler(files, {
    allowedHosts: hosts,
    connectSources: opts.connectSources,
    servedBy: opts.servedBy,
  })
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res)
  }
  const server: Server =
    opts.tls === undefined ? createServer(onRequest) : createHttpsServer(opts.tls, onRequest)
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(opts.port, host, () => {
        server.off('error', reject)
        resolve()
      })
    })
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    throw new KithError(
      'io',
      code === 'EADDRINUSE'
        ? `port ${opts.port} on ${host} is in use; pick another with --web-port (0 picks a free one), or --no-web`
        : `cannot serve the web app on ${host}:${opts.port}: ${String(err)}`,
      { cause: err },
    )
  }
  port = (server.address() as AddressInfo).port
  const scheme = opts.tls === undefined ? 'http' : 'https'
  const shown = isLoopbackHost(host) ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host
  return {
    url: `${scheme}://${shown}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

/**
 * The app at a hub's own origin (`kith hub`): answers the Host names of the URLs the hub takes
 * AUTH for (so a page always dials a URL its AUTH can name), and lets the page connect to them.
 */
export function hubWebHandler(
  files: ReadonlyMap<string, WebFile>,
  servedBy: ServedBy,
): (req: IncomingMessage, res: ServerResponse, relayUrls: readonly string[]) => boolean {
  return (req, res, relayUrls) =>
    makeWebHandler(files, {
      allowedHosts: () => hostsOf(relayUrls),
      connectSources: () => relayUrls,
      servedBy: () => servedBy,
    })(req, res)
}
