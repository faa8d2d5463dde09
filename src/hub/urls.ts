import { isIP } from 'node:net'
import { networkInterfaces } from 'node:os'
import { normalizeRelayUrl } from '../events/nip42.js'

export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.')
}

export function isWildcardHost(host: string): boolean {
  return host === '0.0.0.0' || host === '::'
}

function urlHost(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host
}

/**
 * The URLs a client may name in its AUTH relay tag: the bound address (every loopback alias when
 * bound to loopback, every interface address when bound to a wildcard) plus the `--url`s the
 * operator declared for tunnels and proxies. The Host header is never trusted for this: a
 * man-in-the-middle hub chooses its own Host header.
 */
export function allowedRelayUrls(opts: {
  host: string
  port: number
  tls: boolean
  publicUrls: readonly string[]
}): string[] {
  const scheme = opts.tls ? 'wss' : 'ws'
  const hosts = new Set<string>([opts.host])
  if (isLoopbackHost(opts.host)) for (const h of ['localhost', '127.0.0.1', '::1']) hosts.add(h)
  if (isWildcardHost(opts.host)) {
    hosts.add('localhost')
    for (const list of Object.values(networkInterfaces())) {
      for (const info of list ?? []) hosts.add(info.address)
    }
  }
  const urls = [...hosts].map((h) => normalizeRelayUrl(`${scheme}://${urlHost(h)}:${opts.port}`))
  return [...new Set([...opts.publicUrls.map(normalizeRelayUrl), ...urls])]
}
