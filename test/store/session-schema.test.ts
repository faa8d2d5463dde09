import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { openDatabase } from '../../src/store/db.js'
import { nodeDbFile, NodeStore } from '../../src/store/node-store.js'
import { nodeMigrations } from '../../src/store/node-schema.js'
import { threadSessionsMigration } from '../../src/store/session-schema.js'
import { tempDir } from '../helpers/tmp.js'

describe('node.db sessions keyed by thread', () => {
  it("keeps each channel's session as its main thread, and keeps threads apart", () => {
    const home = tempDir()
    // A node.db of one session per (agent, channel), with a pinned mode and model.
    const old = openDatabase(
      join(home, nodeDbFile),
      nodeMigrations.slice(0, nodeMigrations.indexOf(threadSessionsMigration)),
    )
    old
      .prepare(
        `INSERT INTO agent_sessions (agent, channel, session_id, cwd, adapter, mode, model, model_option)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run('a1', 'ops', 's-1', '/work', 'codex-acp', 'read-only', 'gpt', 'model')
    old.close()
    const store = new NodeStore(home)
    try {
      const main = {
        sessionId: 's-1',
        cwd: '/work',
        adapter: 'codex-acp',
        mode: 'read-only',
        model: { value: 'gpt', configId: 'model' },
      }
      expect(store.agentSession('a1', 'ops')).toEqual(main)
      expect(store.agentSession('a1', { channel: 'ops', thread: '' })).toEqual(main)
      expect(store.agentSession('a1', { channel: 'ops', thread: 'r1' })).toBeUndefined()
      store.setAgentSession('a1', { channel: 'ops', thread: 'r1' }, { sessionId: 's-2', cwd: '/w' })
      store.setAgentSession('a1', { channel: 'ops', thread: 'r2' }, { sessionId: 's-3', cwd: '/w' })
      expect(store.agentSession('a1', { channel: 'ops', thread: 'r1' })).toEqual({
        sessionId: 's-2',
        cwd: '/w',
      })
      expect(store.agentSession('a1', 'ops')).toEqual(main)
      expect(store.agentSessionCount('a1')).toBe(3)
      expect(store.sessions.all().map((r) => [r.channel, r.thread, r.sessionId])).toEqual(
        expect.arrayContaining([
          ['ops', '', 's-1'],
          ['ops', 'r1', 's-2'],
          ['ops', 'r2', 's-3'],
        ]),
      )
      // Saved again (a new ACP session for the thread): where it runs is kept.
      store.setAgentSession(
        'a1',
        { channel: 'ops', thread: 'r2' },
        {
          sessionId: 's-4',
          cwd: '/wt',
          title: 'fix it',
          project: 'kith',
          worktree: { path: '/wt', branch: 'kith/a1-r2' },
        },
      )
      store.setAgentSession(
        'a1',
        { channel: 'ops', thread: 'r2' },
        { sessionId: 's-5', cwd: '/wt' },
      )
      expect(store.agentSession('a1', { channel: 'ops', thread: 'r2' })).toEqual({
        sessionId: 's-5',
        cwd: '/wt',
        title: 'fix it',
        project: 'kith',
        worktree: { path: '/wt', branch: 'kith/a1-r2' },
      })
      // A closed session is kept (listed) but not resumed.
      store.sessions.close('a1', { channel: 'ops', thread: 'r1' }, 5)
      expect(store.agentSession('a1', { channel: 'ops', thread: 'r1' })).toBeUndefined()
      expect(store.sessions.record('a1', { channel: 'ops', thread: 'r1' })?.closedAt).toBe(5)
      expect(store.agentSessionCount('a1')).toBe(2)
      // A closed thread's worktree was removed: a session saved for it again starts afresh.
      store.sessions.close('a1', { channel: 'ops', thread: 'r2' }, 6)
      store.setAgentSession('a1', { channel: 'ops', thread: 'r2' }, { sessionId: 's-6', cwd: '/w' })
      expect(store.agentSession('a1', { channel: 'ops', thread: 'r2' })).toEqual({
        sessionId: 's-6',
        cwd: '/w',
        title: 'fix it',
      })
    } finally {
      store.close()
    }
  })
})
