import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { signEvent, type NostrEvent } from '../../src/events/event.js'
import { causalOrder } from '../../src/node/chat-store.js'
import { PresenceBook, makePresence, reportedState } from '../../src/node/presence.js'

const device = generateSecretKey()
const agent = 'b'.repeat(64)

describe('presence: devices up and their agents', () => {
  it('reads status, interval and agent states; a device is offline after 2.5 silent intervals', () => {
    const book = new PresenceBook()
    const online = signEvent(
      makePresence('online', [{ pubkey: agent, state: 'working' }], 1000, 10),
      device,
    )
    expect(online.tags).toEqual([
      ['status', 'online'],
      ['interval', '10'],
      ['agent', agent, 'working'],
    ])
    // First heard: a newcomer (this node answers it with its own presence).
    expect(book.receive(online, 0)).toBe(true)
    expect(book.receive(online, 1000)).toBe(false)
    expect(book.get(online.pubkey, 20_000)).toMatchObject({
      status: 'online',
      agents: [{ pubkey: agent, state: 'working' }],
    })
    expect(book.hostOf(agent, 20_000)).toMatchObject({ device: online.pubkey, state: 'working' })
    expect(book.get(online.pubkey, 26_001)).toMatchObject({ status: 'offline', agents: [] })
    expect(book.hostOf(agent, 26_001)).toBeUndefined()
    // Silent, it still names the last host of a turn under way, now offline.
    expect(book.lastHost(agent, 26_001)).toEqual({ device: online.pubkey, status: 'offline' })
    // Said offline: the same, at once; back online: online again.
    book.receive(signEvent(makePresence('offline', [], 1001, 10), device), 27_000)
    expect(book.lastHost(agent, 27_000)).toEqual({ device: online.pubkey, status: 'offline' })
    // Back online is a new presence; the old one, arriving again, is older than the offline.
    expect(book.receive(online, 27_500)).toBe(false)
    expect(book.lastHost(agent, 27_500)).toEqual({ device: online.pubkey, status: 'offline' })
    const back = signEvent(
      makePresence('online', [{ pubkey: agent, state: 'working' }], 1002, 10),
      device,
    )
    expect(book.receive(back, 28_000)).toBe(true)
    expect(book.lastHost(agent, 28_000)).toEqual({ device: online.pubkey, status: 'online' })
    expect(book.lastHost('c'.repeat(64), 28_000)).toBeUndefined()
  })

  it('takes an offline presence at once, and drops agent tags it cannot read', () => {
    const book = new PresenceBook()
    book.receive(signEvent(makePresence('online', [], 1, 60), device), 0)
    const off = signEvent(makePresence('offline', [{ pubkey: agent, state: 'idle' }], 2), device)
    expect(off.tags.some((t) => t[0] === 'agent')).toBe(false)
    book.receive(off, 1)
    expect(book.get(off.pubkey, 2)?.status).toBe('offline')
    const odd = signEvent(
      {
        kind: 24141,
        created_at: 3,
        tags: [
          ['status', 'online'],
          ['agent', 'not-hex', 'idle'],
          ['agent', agent, 'dancing'],
          ['agent', agent, 'crashed'],
        ],
        content: '',
      },
      device,
    )
    expect(book.receive(odd, 3)).toBe(true)
    expect(book.get(odd.pubkey, 4)?.agents).toEqual([{ pubkey: agent, state: 'crashed' }])
    expect(reportedState('stopped')).toBe('idle')
  })
})

describe('history in causal order', () => {
  const ev = (
    id: string,
    createdAt: number,
    parent?: string,
  ): { event: NostrEvent; seq: number } => ({
    event: {
      id,
      pubkey: 'c'.repeat(64),
      created_at: createdAt,
      kind: 9,
      tags: parent === undefined ? [] : [['e', parent, '', 'root']],
      content: id,
      sig: '',
    },
    seq: 0,
  })

  it('puts a card or reply after the prompt it answers, even dated earlier or the same second', () => {
    // The card's id sorts before the prompt's, and the reply's clock ran behind.
    const items = [
      ev('ffff', 100),
      ev('0000', 100, 'ffff'),
      ev('1111', 99, 'ffff'),
      ev('2222', 101),
    ]
    expect(causalOrder(items).map((i) => i.event.id)).toEqual(['ffff', '1111', '0000', '2222'])
  })
})
