import { describe, expect, it, onTestFinished } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { signEvent } from '../../src/events/event.js'
import { Kind } from '../../src/events/kinds.js'
import { NodeStore } from '../../src/store/node-store.js'
import { tempDir } from '../helpers/tmp.js'

const sk = generateSecretKey()
const chat = (at: number, text: string) =>
  signEvent({ kind: Kind.ChatMessage, created_at: at, tags: [['h', 'ops']], content: text }, sk)
const policy = (at: number) =>
  signEvent({ kind: Kind.AgentPolicy, created_at: at, tags: [['d', 'agent']], content: '' }, sk)

function storeWith(...events: ReturnType<typeof chat>[]): NodeStore {
  const store = new NodeStore(tempDir())
  onTestFinished(() => store.close())
  store.events.insertBatch(events)
  return store
}

describe('NodeReads: the node reads node.db with its own bounds', () => {
  it('reads one event by id, a replaced version kept apart included', () => {
    const [m, p1, p2] = [chat(10, 'hi'), policy(20), policy(30)]
    const { reads } = storeWith(m, p1, p2)
    expect(reads.event(m.id)).toEqual(m)
    // p2 replaced p1 in the events table; every agent policy version is kept.
    expect(reads.event(p1.id)).toEqual(p1)
    expect(reads.event('0'.repeat(64))).toBeUndefined()
  })

  it("returns a filter's matches newest first, at most its limit, or as many as its ids", () => {
    const messages = [1, 2, 3, 4, 5].map((i) => chat(100 + i, `m${i}`))
    const { reads } = storeWith(...messages)
    expect(reads.events({ kinds: [Kind.ChatMessage], limit: 2 }).map((e) => e.content)).toEqual([
      'm5',
      'm4',
    ])
    const ids = [messages[0]!.id, messages[2]!.id, messages[4]!.id]
    expect(new Set(reads.events({ ids }).map((e) => e.id))).toEqual(new Set(ids))
    expect(reads.newest({ kinds: [Kind.ChatMessage], tags: { h: ['ops'] } })?.content).toBe('m5')
    expect(reads.newest({ kinds: [Kind.ChatMessage], tags: { h: ['dev'] } })).toBeUndefined()
    const withSeq = reads.withArrival({ kinds: [Kind.ChatMessage], limit: 5 })
    expect(withSeq.map((r) => r.event.content)).toEqual(['m5', 'm4', 'm3', 'm2', 'm1'])
    expect(new Set(withSeq.map((r) => r.seq)).size).toBe(5)
  })
})
