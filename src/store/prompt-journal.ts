import type { Statement } from 'better-sqlite3'
import type { Db } from './db.js'

export interface JournalRow {
  eventId: string
  agent: string
  state: 'queued' | 'running'
}

/**
 * Prompts a hosted agent has taken but not yet answered, so a node that stops (or is killed)
 * mid-turn answers each of them after its restart: a queued prompt is run then, a running one
 * gets a visible notice (its tools may have half run: it is not re-run unasked).
 */
export class PromptJournal {
  private readonly stmts: {
    add: Statement<[string, string, number]>
    running: Statement<[string, string]>
    done: Statement<[string, string]>
    forgetAgent: Statement<[string]>
    all: Statement<[], { event_id: string; agent: string; state: 'queued' | 'running' }>
  }

  constructor(db: Db) {
    this.stmts = {
      add: db.prepare(
        `INSERT OR IGNORE INTO agent_prompts (event_id, agent, state, at) VALUES (?, ?, 'queued', ?)`,
      ),
      running: db.prepare(
        `UPDATE agent_prompts SET state = 'running' WHERE event_id = ? AND agent = ?`,
      ),
      done: db.prepare('DELETE FROM agent_prompts WHERE event_id = ? AND agent = ?'),
      forgetAgent: db.prepare('DELETE FROM agent_prompts WHERE agent = ?'),
      all: db.prepare('SELECT event_id, agent, state FROM agent_prompts ORDER BY at, rowid'),
    }
  }

  add(eventId: string, agent: string, now: number): void {
    this.stmts.add.run(eventId, agent, now)
  }

  running(eventId: string, agent: string): void {
    this.stmts.running.run(eventId, agent)
  }

  done(eventId: string, agent: string): void {
    this.stmts.done.run(eventId, agent)
  }

  /** An agent no longer hosted here answers nothing more. */
  forgetAgent(agent: string): void {
    this.stmts.forgetAgent.run(agent)
  }

  all(): JournalRow[] {
    return this.stmts.all
      .all()
      .map((r) => ({ eventId: r.event_id, agent: r.agent, state: r.state }))
  }
}
