import { describe, expect, it } from 'vitest'
import { generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import { signEvent } from '../../src/events/event.js'
import { isOnline, makePresence, parsePresence, PresenceBook } from '../../src/events/presence.js'

// One rule for "is this device online" (kith-chat/1, Presence; issue 32): the node, the CLI
// (through the node) and the web app's Fleet page all ask events/presence.ts.

const device = generateSecretKey()
const agent = 'a'.repeat(64)

describe('presence: the one rule', () => {
  it('a device that said offline is offline at once, not 2.5 intervals later', () => {
    const book = new PresenceBook()
    book.receive(signEvent(makePresence('online', [], 100, 60), device), 0)
    book.receive(signEvent(makePresence('offline', [], 101, 60), device), 1_000)
    expect(book.get(getPublicKey(device), 1_001)?.status).toBe('offline')
    expect(book.get(getPublicKey(device), 1_001)?.agents).toEqual([])
  })

  it('attacker (a replayed or late presence): an older online does not undo a newer offline', () => {
    const book = new PresenceBook()
    const online = signEvent(
      makePresence('online', [{ pubkey: agent, state: 'working' }], 100, 60),
      device,
    )
    const offline = signEvent(makePresence('offline', [], 101, 60), device)
    book.receive(online, 0)
    book.receive(offline, 1_000)
    // The same signed online arrives again (a second hub, a reconnect, a replay): still offline.
    expect(book.receive(online, 2_000)).toBe(false)
    expect(book.get(online.pubkey, 2_001)?.status).toBe('offline')
    expect(book.hostOf(agent, 2_001)).toBeUndefined()
    expect(book.lastHost(agent, 2_001)).toEqual({ device: online.pubkey, status: 'offline' })
  })

  it('online until 2.5 of its own intervals pass without a word, on the hearer’s clock', () => {
    const heard = { status: 'online' as const, intervalSeconds: 10, heardAtMs: 5_000 }
    expect(isOnline(heard, 5_000 + 25_000)).toBe(true)
    expect(isOnline(heard, 5_000 + 25_001)).toBe(false)
    expect(isOnline({ ...heard, status: 'offline' }, 5_000)).toBe(false)
  })

  it('reads a presence leniently: a bad interval is the default, unreadable agents are skipped', () => {
    const p = parsePresence(
      signEvent(
        {
          ...makePresence('online', [], 7),
          tags: [
            ['status', 'online'],
            ['interval', 'soon'],
            ['agent', 'not-hex', 'idle'],
            ['agent', agent, 'dancing'],
            ['agent', agent, 'idle'],
          ],
        },
        device,
      ),
    )
    expect(p).toMatchObject({ status: 'online', intervalSeconds: 60, createdAt: 7 })
    expect(p?.agents).toEqual([{ pubkey: agent, state: 'idle' }])
    expect(
      parsePresence(signEvent({ kind: 9, created_at: 1, tags: [], content: '' }, device)),
    ).toBeUndefined()
  })
})
