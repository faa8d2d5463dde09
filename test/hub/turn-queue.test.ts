import { describe, expect, it } from 'vitest'
import { TurnQueue } from '../../src/hub/turn-queue.js'

// NIP-77 steps yield to I/O between each other (issue 30, item 4): one step a loop turn, where
// bare setImmediate ran every queued step in one check phase, before any frame was read.

const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('TurnQueue', () => {
  it('runs one item a loop turn, in order', async () => {
    const q = new TurnQueue()
    const ran: string[] = []
    for (const name of ['a', 'b', 'c']) q.schedule(() => ran.push(name))
    // An immediate queued now runs in the same check phase as the first item, before the second.
    await turn()
    expect(ran).toEqual(['a'])
    await turn()
    expect(ran).toEqual(['a', 'b'])
    await turn()
    expect(ran).toEqual(['a', 'b', 'c'])
    expect(q.length).toBe(0)
  })

  it('a cancelled item never runs, and does not hold up the rest for long', async () => {
    const q = new TurnQueue()
    const ran: string[] = []
    const cancel = q.schedule(() => ran.push('a'))
    q.schedule(() => ran.push('b'))
    cancel()
    await turn()
    await turn()
    expect(ran).toEqual(['b'])
  })

  it('runs its before-turn hook ahead of each item (the hub commits what its last poll read)', async () => {
    const ran: string[] = []
    const q = new TurnQueue(() => ran.push('commit'))
    q.schedule(() => ran.push('a'))
    q.schedule(() => ran.push('b'))
    await turn()
    await turn()
    expect(ran).toEqual(['commit', 'a', 'commit', 'b'])
  })
})
