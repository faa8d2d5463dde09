import { describe, expect, it } from 'vitest'
import { threadFor } from '../../src/node/session-threads.js'

const reply = (root: string) => ({ id: 'me', tags: [['e', root, '', 'root']] })

describe('threadFor: which session a prompt goes to', () => {
  it('a top-level prompt starts a thread of its own', () => {
    expect(threadFor({ id: 'top', tags: [] }, () => true)).toBe('top')
  })

  it("a reply goes to its thread's session", () => {
    expect(threadFor(reply('r1'), (t) => t === 'r1' || t === undefined)).toBe('r1')
  })

  it("a reply in a thread of before threads were sessions goes to the channel's main session", () => {
    expect(threadFor(reply('old'), (t) => t === undefined)).toBeUndefined()
  })

  it('a reply in a thread with no session, and no main session, starts one for its thread', () => {
    expect(threadFor(reply('r2'), () => false)).toBe('r2')
  })
})
