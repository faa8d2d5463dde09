import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { openDatabase } from '../../src/store/db.js'
import { nodeDbFile, NodeStore } from '../../src/store/node-store.js'
import { nodeMigrations } from '../../src/store/node-schema.js'
import { tempDir } from '../helpers/tmp.js'

describe('node.db agent sessions', () => {
  it('keeps a session saved before mode and model were kept, and stores both after', () => {
    const home = tempDir()
    // A node.db from before the mode/model migration, with one session in it.
    const old = openDatabase(join(home, nodeDbFile), nodeMigrations.slice(0, -1))
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
})
