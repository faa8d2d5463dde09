import { KithError } from '../errors.js'
import { parseEvent, signEvent, tagValue, type NostrEvent } from './event.js'
import { normalizeRelayUrl } from './nip42.js'

/**
 * Connect tickets (kith-hub, "Connect tickets"): a NIP-98-style kind-27235 event a member signs
 * for one hub URL and carries on the WebSocket URL as `?auth=` (base64url JSON). A hub checks it
 * at the HTTP upgrade, before any WebSocket exists: a valid ticket from a member's key skips the
 * per-address connection rate, so strangers flooding from a member's address (a NAT, another tab
 * of the member's browser) cannot keep the member out. Browsers cannot set headers on a
 * WebSocket, hence the query parameter. A ticket is not a login: the connection still AUTHs.
 */
export const connectTicketParam = 'auth'

/** NIP-98's HTTP-auth kind. Never published: a ticket only travels in an upgrade request. */
export const connectTicketKind = 27235

/** A ticket older or newer than this (by the hub's clock) is ignored. Short: it is replayable. */
export const connectTicketMaxSkewSeconds = 60

/** Longest `auth` value a hub reads; a ticket is ~450 characters. */
export const connectTicketMaxChars = 2048

/** The kind-27235 event for a GET of `url` (the hub URL without any ticket). */
export function makeConnectTicket(url: string, secretKey: Uint8Array, now: number): NostrEvent {
  return signEvent(
    {
      kind: connectTicketKind,
      created_at: now,
      tags: [
        ['u', url],
        ['method', 'GET'],
      ],
      content: '',
    },
    secretKey,
  )
}

/**
 * `url` with a fresh connect ticket signed by `secretKey`. Only for the hubs of this device's own
 * fleet: a plain third-party relay has no use for one and would learn a replayable credential.
 */
export function withConnectTicket(
  url: string,
  secretKey: Uint8Array,
  now = Math.floor(Date.now() / 1000),
): string {
  const plain = withoutConnectTicket(url)
  const ticket = makeConnectTicket(plain, secretKey, now)
  // Appended as text, not through URL: the bare URL comes back exactly as it was given.
  const hash = plain.indexOf('#')
  const base = hash < 0 ? plain : plain.slice(0, hash)
  const param = `${connectTicketParam}=${toBase64Url(JSON.stringify(ticket))}`
  return `${base}${base.includes('?') ? '&' : '?'}${param}`
}

/** `url` without its connect ticket, as it was before one was added: what AUTH and logs name. */
export function withoutConnectTicket(url: string): string {
  return url.replace(ticketParam, (_all, sep: string, more: string) => (more === '' ? '' : sep))
}

/** The `auth` parameter with the separator before it and whether another parameter follows. */
const ticketParam = /([?&])auth=[^&#]*(&?)/

/**
 * The ticket carried by a request target (`/path?auth=…`), if any. Throws KithError('invalid')
 * when the parameter is there but is not an event.
 */
export function readConnectTicket(target: string): NostrEvent | undefined {
  const query = target.indexOf('?')
  if (query < 0) return undefined
  const value = new URLSearchParams(target.slice(query + 1)).get(connectTicketParam)
  if (value === null) return undefined
  if (value.length > connectTicketMaxChars) {
    throw new KithError('invalid', `connect ticket longer than ${connectTicketMaxChars} characters`)
  }
  let json: unknown
  try {
    json = JSON.parse(fromBase64Url(value))
  } catch (cause) {
    throw new KithError('invalid', 'connect ticket is not base64url JSON', { cause })
  }
  return parseEvent(json)
}

/**
 * Checks a ticket's content against the hub: kind, `u` naming one of its URLs, method GET, and
 * freshness. The caller verifies id and signature, and that the key is a member's.
 */
export function checkConnectTicket(
  event: NostrEvent,
  expected: { relayUrls: ReadonlySet<string>; now: number },
): void {
  if (event.kind !== connectTicketKind) {
    throw new KithError('invalid', `a connect ticket is kind ${connectTicketKind}`)
  }
  if (tagValue(event, 'method')?.toUpperCase() !== 'GET') {
    throw new KithError('invalid', 'a connect ticket names method GET')
  }
  const u = tagValue(event, 'u')
  let normalized: string | undefined
  try {
    normalized = u === undefined ? undefined : normalizeRelayUrl(u)
  } catch {
    // An unparseable u tag names no hub: reported as the mismatch below.
    normalized = undefined
  }
  if (normalized === undefined || !expected.relayUrls.has(normalized)) {
    throw new KithError('invalid', `connect ticket does not name this hub (${u ?? 'no u tag'})`)
  }
  if (Math.abs(event.created_at - expected.now) > connectTicketMaxSkewSeconds) {
    throw new KithError(
      'invalid',
      `connect ticket is stale (more than ${connectTicketMaxSkewSeconds} s off)`,
    )
  }
}

function toBase64Url(text: string): string {
  let binary = ''
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte)
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

function fromBase64Url(value: string): string {
  const binary = atob(value.replace(/-/g, '+').replace(/_/g, '/'))
  return new TextDecoder('utf-8', { fatal: true }).decode(
    Uint8Array.from(binary, (c) => c.charCodeAt(0)),
  )
}
