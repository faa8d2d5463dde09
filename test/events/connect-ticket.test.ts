import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import {
  checkConnectTicket,
  connectTicketKind,
  readConnectTicket,
  withConnectTicket,
  withoutConnectTicket,
} from '../../src/events/connect-ticket.js'
import { publicKeyOf, verifyEventSignature } from '../../src/events/event.js'
import { isKithError } from '../../src/errors.js'

const hub = 'ws://127.0.0.1:7447'
const relayUrls = new Set([hub])
const now = 1_800_000_000

const target = (url: string) => {
  const u = new URL(url)
  return `${u.pathname}${u.search}`
}

describe('connect tickets', () => {
  it('carries a signed kind-27235 GET of the bare hub URL, which the hub reads back', () => {
    const sk = generateSecretKey()
    const url = withConnectTicket(hub, sk, now)
    expect(url).toMatch(/^ws:\/\/127\.0\.0\.1:7447\?auth=[A-Za-z0-9_-]+$/)
    const ticket = readConnectTicket(target(url))!
    expect(ticket.kind).toBe(connectTicketKind)
    expect(ticket.pubkey).toBe(publicKeyOf(sk))
    expect(ticket.tags).toEqual([
      ['u', hub],
      ['method', 'GET'],
    ])
    expect(verifyEventSignature(ticket)).toBe(true)
    expect(() => checkConnectTicket(ticket, { relayUrls, now: now + 30 })).not.toThrow()
    expect(withoutConnectTicket(url)).toBe(hub)
    expect(withoutConnectTicket(withConnectTicket(`${hub}/r?x=1`, sk, now))).toBe(`${hub}/r?x=1`)
    expect(withoutConnectTicket(`${hub}/?auth=A&x=1`)).toBe(`${hub}/?x=1`)
    // A fresh ticket replaces an old one rather than piling up.
    expect(withConnectTicket(url, sk, now).match(/auth=/g)).toHaveLength(1)
  })

  it('refuses stale tickets, tickets for another hub and garbage', () => {
    const sk = generateSecretKey()
    const ticket = readConnectTicket(target(withConnectTicket(hub, sk, now)))!
    const invalid = (f: () => unknown) => {
      try {
        f()
      } catch (err) {
        return isKithError(err, 'invalid')
      }
      return false
    }
    expect(invalid(() => checkConnectTicket(ticket, { relayUrls, now: now + 61 }))).toBe(true)
    expect(
      invalid(() =>
        checkConnectTicket(ticket, { relayUrls: new Set(['ws://elsewhere:7447']), now }),
      ),
    ).toBe(true)
    expect(invalid(() => readConnectTicket('/?auth=bm90IGEgdGlja2V0'))).toBe(true)
    expect(invalid(() => readConnectTicket(`/?auth=${'A'.repeat(5000)}`))).toBe(true)
    expect(readConnectTicket('/')).toBeUndefined()
    expect(readConnectTicket('/?other=1')).toBeUndefined()
  })
})
