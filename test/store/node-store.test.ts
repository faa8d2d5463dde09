import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { openDatabase } from '../../src/store/db.js'
import { channelFirstsMigration, keptVersionsMigration } from '../../src/store/event-schema.js'
import { nodeDbFile, NodeStore } from '../../src/store/node-store.js'
import { nodeMigrations } from '../../src/store/node-schema.js'
import { threadSessionsMigration } from '../../src/store/session-schema.js'
import { EventStore } from '../../src/store/event-store.js'
import { tempDir } from '../helpers/tmp.js'
import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf, signEvent } from '../../src/events/event.js'

describe('node.db agent sessions', () => {
  it('keeps a session saved before mode and model were kept, and stores both after', () => {
    const home = tempDir()
    // A node.db from before sessions were kept per thread, with one session in it.
    const old = openDatabase(
      join(home, nodeDbFile),
      nodeMigrations.slice(0, nodeMigrations.indexOf(threadSessionsMigration)),
    )
    old
      .prepare('INSERT INTO agent_sessions (agent, channel, session_id, cwd) VALUES (?, ?, ?, ?)')
      .run('a1', 'ops', 's-1', '/work')
    old.close()
    const store = new NodeStore(home)
    try {
      expect(store.agentSession('a1', 'ops')).toEqual({ sessionId: 's-1', cwd: '/work' })
      store.setAgentSession('a1', 'dev', {
        sessionId: 's-2',
        cwd: '/work',
        adapter: 'codex-acp',
        version: '0.16.0',
        mode: 'read-only',
        model: { value: 'mock-model', configId: 'model' },
      })
      expect(store.agentSession('a1', 'dev')).toEqual({
        sessionId: 's-2',
        cwd: '/work',
        adapter: 'codex-acp',
        version: '0.16.0',
        mode: 'read-only',
        model: { value: 'mock-model', configId: 'model' },
      })
      store.setAgentSession('a1', 'dev', { sessionId: 's-3', cwd: '/w', model: { value: 'm' } })
      expect(store.agentSession('a1', 'dev')).toEqual({
        sessionId: 's-3',
        cwd: '/w',
        model: { value: 'm' },
      })
      expect(store.agentSessionCount('a1')).toBe(2)
      expect(store.agentSessionCount('nobody')).toBe(0)
    } finally {
      store.close()
    }
  })

  it('keeps every definition its outbox still has when it starts keeping versions', () => {
    const home = tempDir()
    const sk = generateSecretKey()
    const v = (at: number) =>
      signEvent({ kind: 34140, created_at: at, tags: [['d', 'ops']], content: '' }, sk)
    const [v1, v2] = [v(1), v(2)]
    // A node.db from before definitions' versions were kept (the migrations after it too).
    const old = openDatabase(
      join(home, nodeDbFile),
      nodeMigrations.slice(0, nodeMigrations.indexOf(keptVersionsMigration)),
    )
    const enqueue = old.prepare('INSERT INTO outbox (event_id, raw, queued_at) VALUES (?, ?, ?)')
    enqueue.run(v1.id, JSON.stringify(v1), 1)
    enqueue.run(v2.id, JSON.stringify(v2), 2)
    old
      .prepare(
        'INSERT INTO events (id, pubkey, kind, created_at, rkey, raw) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run(v2.id, v2.pubkey, 34140, 2, `34140:${v2.pubkey}:ops`, JSON.stringify(v2))
    old.close()
    const store = new NodeStore(home)
    try {
      expect([...store.events.allVersionsOfKind(34140)]).toEqual([v1, v2])
      expect(store.events.legacyVersionIds(34140).sort()).toEqual([v1.id, v2.id].sort())
      expect(store.events.getEvent(v1.id)).toEqual(v1)
      // Which hub holds what: marked, or accepted from the outbox.
      expect(store.hubHolds(v1.id, 'ws://a')).toBe(false)
      store.markHeld([v1.id], 'ws://a')
      store.recordDelivery(v2.id, 'ws://b', true, '', 3)
      store.recordDelivery(v1.id, 'ws://b', false, 'no', 3)
      expect([
        store.hubHolds(v1.id, 'ws://a'),
        store.hubHolds(v2.id, 'ws://a'),
        store.hubHolds(v2.id, 'ws://b'),
        store.hubHolds(v1.id, 'ws://b'),
      ]).toEqual([true, false, true, false])
    } finally {
      store.close()
    }
  })

  it("keeps each key's earliest event per channel (issue 34): filled from an older node.db, then as events come", () => {
    const home = tempDir()
    const [a, b] = [generateSecretKey(), generateSecretKey()]
    const msg = (at: number, sk: Uint8Array) =>
      signEvent({ kind: 9, created_at: at, tags: [['h', 'ops']], content: `at ${at}` }, sk)
    // A node.db from before it kept channel_firsts, holding channel messages.
    const oldDb = openDatabase(
      join(home, nodeDbFile),
      nodeMigrations.slice(0, nodeMigrations.indexOf(channelFirstsMigration)),
    )
    new EventStore(oldDb).insertBatch([msg(30, a), msg(20, a), msg(25, b)])
    oldDb.close()
    const store = new NodeStore(home)
    try {
      store.events.insertBatch([msg(10, b), msg(40, a)])
      // Read from the kept table, not grouped from the tag rows: with those gone it still answers.
      store.events.db.prepare('DELETE FROM tags').run()
      const firsts = store.events
        .earliestInChannels()
        .map((f) => `${f.channel} ${f.pubkey === publicKeyOf(a) ? 'a' : 'b'} ${f.createdAt}`)
        .sort()
      expect(firsts).toEqual(['ops a 20', 'ops b 10'])
    } finally {
      store.close()
    }
  })
})
