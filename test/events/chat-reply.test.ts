import { describe, expect, it } from 'vitest'
import { endsTurn, makeNotice, makeReply, threadOf } from '../../src/events/chat.js'
import { isNotice } from '../../src/events/agent-binding.js'

// An agent's replies and notices are made in events/chat.ts (issue 32): the NIP-10 thread of a
// reply is derived once, for the agent's answers and the device's notices alike.

const fleet = 'f'.repeat(64)
const author = 'a'.repeat(64)

describe('replies and notices', () => {
  it('a reply to a first message roots at it; to a threaded one, at its root, replying to it', () => {
    const first = { id: '1'.repeat(64), pubkey: author, tags: [['h', 'ops']] }
    const a = makeReply({ question: first, fleet, text: 'yes' }, 5)
    expect(a).toEqual({
      kind: 9,
      created_at: 5,
      tags: [
        ['h', 'ops'],
        ['fleet', fleet],
        ['e', first.id, '', 'root'],
        ['p', author],
      ],
      content: 'yes',
    })
    const threaded = {
      id: '2'.repeat(64),
      pubkey: author,
      tags: [
        ['h', 'ops'],
        ['e', first.id, '', 'root'],
      ],
    }
    const b = makeReply(
      {
        question: threaded,
        fleet,
        text: 'stopped',
        notice: true,
        outcome: ['cancelled', 'cancelled'],
        extra: [['auth', 'x']],
      },
      6,
    )
    expect(threadOf(b)).toEqual({ root: first.id, parent: threaded.id })
    expect(isNotice(b)).toBe(true)
    expect(b.tags.slice(-2)).toEqual([
      ['outcome', 'cancelled', 'cancelled'],
      ['auth', 'x'],
    ])
    // A message naming no channel is answered in #general.
    expect(makeReply({ question: { ...first, tags: [] }, fleet, text: 'x' }, 7).tags[0]).toEqual([
      'h',
      'general',
    ])
  })

  it('a notice is said in a channel or a thread, naming the request it answers', () => {
    expect(makeNotice({ channel: 'ops', fleet, text: 'new session' }, 1).tags).toEqual([
      ['h', 'ops'],
      ['fleet', fleet],
    ])
    const n = makeNotice(
      {
        channel: 'ops',
        fleet,
        text: '✓ closed',
        thread: '3'.repeat(64),
        mention: '4'.repeat(64),
        notice: true,
      },
      2,
    )
    expect(n.tags).toEqual([
      ['h', 'ops'],
      ['fleet', fleet],
      ['e', '3'.repeat(64), '', 'root'],
      ['e', '4'.repeat(64), '', 'mention'],
      ['notice'],
    ])
  })

  it('a reply ends its turn; a notice only by an outcome that is not one where the turn goes on', () => {
    const prompt = { id: '1'.repeat(64), pubkey: author, tags: [['h', 'ops']] }
    const reply = (spec: Partial<Parameters<typeof makeReply>[0]>) =>
      makeReply({ question: prompt, fleet, text: '⚠ x', ...spec }, 5)
    expect(endsTurn(reply({}))).toBe(true)
    expect(endsTurn(reply({ outcome: ['failed', 'stopped'] }))).toBe(true)
    // A quorum card's tally, a ✓: said about the turn, not its end.
    expect(endsTurn(reply({ notice: true }))).toBe(false)
    expect(endsTurn(reply({ notice: true, outcome: ['refused', 'policy'] }))).toBe(true)
    // An interrupt refused (the prompt is queued), an answer to a card not acted on: it goes on.
    expect(endsTurn(reply({ notice: true, outcome: ['refused', 'queued'] }))).toBe(false)
    expect(endsTurn(reply({ notice: true, outcome: ['refused', 'still-open'] }))).toBe(false)
  })
})
