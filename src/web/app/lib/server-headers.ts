import { normalizeRelayUrl, parseServedBy, type ServedBy } from '../../../browser-core.js'
import { offline } from './network.js'

// What this page's server says in its headers (HEAD /): the hubs its CSP lets the page reach, and
// whose machine served it.

/**
 * The hub URLs this page may connect to: its own origin, and what its Content-Security-Policy
 * names in connect-src (the server puts the fleet's hubs there). Asked of the server, since a
 * page cannot read its own CSP; undefined when it is unknown (offline, an old cached page).
 */
export async function cspAllowedHubs(): Promise<Set<string> | undefined> {
  let csp: string | null
  if (offline.value) return undefined
  try {
    const res = await fetch('/', { method: 'HEAD', cache: 'no-store' })
    csp = res.headers.get('content-security-policy')
  } catch {
    // Offline (the cached shell): no way to know; the links will tell.
    return undefined
  }
  if (csp === null) return undefined
  const directive = csp.split(';').find((d) => d.trim().startsWith('connect-src'))
  const sources = (directive ?? '').trim().split(/\s+/).slice(1)
  const self = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}`
  const allowed = new Set<string>()
  for (const s of sources) {
    if (s === "'self'") allowed.add(normalizeRelayUrl(self))
    else if (/^wss?:\/\//.test(s)) allowed.add(normalizeRelayUrl(s))
  }
  return allowed
}

/**
 * Whose machine served this page (its `kith-served-by` header), asked of the server; `offline`
 * when the server cannot be asked, undefined when it does not say (not a Kith server).
 */
export async function servedByServer(): Promise<ServedBy | undefined | 'offline'> {
  if (offline.value) return 'offline'
  try {
    const res = await fetch('/', { method: 'HEAD', cache: 'no-store' })
    return parseServedBy(res.headers.get('kith-served-by'))
  } catch {
    // The server is out of reach: pairing cannot go on anyway, and the screen says so.
    return 'offline'
  }
}
