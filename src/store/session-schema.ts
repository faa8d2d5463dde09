import type { Migration } from './db.js'

/**
 * node.db's agent_sessions keyed by thread (issue 16: threads are sessions). Before it, one row
 * per (agent, channel); each such row becomes that channel's main thread (thread ''), so no
 * session is lost and each resumes as before. The new columns describe a session for
 * `kith session list`: its title, where it runs (a project, a worktree and its branch), when it
 * began and was last used, and when it was closed (a closed session is kept, not resumed).
 */
export const threadSessionsMigration: Migration = (db) => {
  db.exec(`
    CREATE TABLE agent_sessions_v2 (
      agent TEXT NOT NULL,
      channel TEXT NOT NULL,
      thread TEXT NOT NULL DEFAULT '',
      session_id TEXT NOT NULL,
      cwd TEXT NOT NULL,
      adapter TEXT,
      version TEXT,
      mode TEXT,
      model TEXT,
      model_option TEXT,
      title TEXT,
      project TEXT,
      worktree TEXT,
      branch TEXT,
      created_at INTEGER NOT NULL DEFAULT 0,
      updated_at INTEGER NOT NULL DEFAULT 0,
      closed_at INTEGER,
      PRIMARY KEY (agent, channel, thread)
    );
    INSERT INTO agent_sessions_v2
      (agent, channel, thread, session_id, cwd, adapter, version, mode, model, model_option)
      SELECT agent, channel, '', session_id, cwd, adapter, version, mode, model, model_option
      FROM agent_sessions;
    DROP TABLE agent_sessions;
    ALTER TABLE agent_sessions_v2 RENAME TO agent_sessions;
  `)
}
