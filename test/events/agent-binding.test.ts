import { describe, expect, it } from 'vitest'
import {
  boundPrompts,
  checkFleetTag,
  checkFresh,
  controlMaxAgeSeconds,
  isNotice,
  requireFleet,
} from '../../src/events/agent-binding.js'
import { isInterrupt, makeChatMessage } from '../../src/events/chat.js'

const fleet = 'f'.repeat(64)
const other = 'e'.repeat(64)
const p1 = '1'.repeat(64)
const p2 = '2'.repeat(64)

describe('fleet tags', () => {
  it('a hub or node refuses an agent event made for another fleet, or naming several', () => {
    expect(checkFleetTag({ kind: 4144, tags: [['fleet', other]] }, fleet)).toEqual({
      ok: false,
      reason: 'its fleet tag names another fleet',
    })
    expect(
      checkFleetTag(
        {
          kind: 9,
          tags: [
            ['fleet', fleet],
            ['fleet', other],
          ],
        },
        fleet,
      ),
    ).toMatchObject({ ok: false, reason: 'it carries several fleet tags' })
    expect(checkFleetTag({ kind: 4143, tags: [['fleet', fleet]] }, fleet)).toEqual({ ok: true })
    // Absent passes here (plain NIP-01 clients); cancels, interrupts and decisions require it.
    expect(checkFleetTag({ kind: 9, tags: [] }, fleet)).toEqual({ ok: true })
    expect(requireFleet({ kind: 4144, tags: [] }, fleet)).toEqual({
      ok: false,
      reason: 'it names no fleet (made by an older client?)',
    })
    // Kinds with their own fleet rules (grants) are not judged here.
    expect(checkFleetTag({ kind: 4140, tags: [['fleet', other]] }, fleet)).toEqual({ ok: true })
  })
})

describe('freshness', () => {
  it(`acts on what is at most ${controlMaxAgeSeconds} s from the clock, either way`, () => {
    const now = 1_750_000_000
    expect(checkFresh({ created_at: now - controlMaxAgeSeconds }, now)).toEqual({ ok: true })
    expect(checkFresh({ created_at: now - 720 }, now)).toEqual({
      ok: false,
      reason: 'it was made 12 min ago (older than 5 min is not acted on)',
    })
    expect(checkFresh({ created_at: now + 400 }, now)).toEqual({
      ok: false,
      reason: "it is dated 7 min ahead of this node's clock",
    })
  })
})

describe('bound prompts', () => {
  it('a cancel names turns with e tags; an interrupt with its interrupt tags, not its thread', () => {
    expect(
      boundPrompts({
        kind: 4144,
        tags: [
          ['h', 'ops'],
          ['e', p1],
          ['e', p2],
        ],
      }),
    ).toEqual(new Set([p1, p2]))
    const interrupt = makeChatMessage(
      {
        channel: 'ops',
        text: '@bot stop',
        interrupt: true,
        interruptPrompts: [p1],
        replyTo: { id: p2 },
        fleet,
      },
      1,
    )
    expect(interrupt.tags).toEqual([
      ['h', 'ops'],
      ['fleet', fleet],
      ['e', p2, '', 'root'],
      ['interrupt', p1],
    ])
    expect(isInterrupt(interrupt)).toBe(true)
    expect(boundPrompts({ ...interrupt, kind: 9 })).toEqual(new Set([p1]))
    // Naming no turn: still an interrupt (it runs next), but it stops nothing.
    const bare = makeChatMessage({ channel: 'ops', text: 'x', interrupt: true }, 1)
    expect(bare.tags).toContainEqual(['interrupt'])
    expect(boundPrompts(bare)).toEqual(new Set())
    expect(isNotice({ tags: [['notice']] })).toBe(true)
  })
})
