import type { Statement } from 'better-sqlite3'
import type { Db } from './db.js'
import type { SavedSession, SessionRecord } from './saved-session.js'

/** Where a session lives: its channel, and its thread's root ('' or absent: the main thread). */
export interface SessionWhere {
  channel: string
  thread?: string | undefined
}

interface Row {
  agent: string
  channel: string
  thread: string
  session_id: string
  cwd: string
  adapter: string | null
  version: string | null
  mode: string | null
  model: string | null
  model_option: string | null
  title: string | null
  project: string | null
  worktree: string | null
  branch: string | null
  created_at: number
  updated_at: number
  closed_at: number | null
}

const columns = `agent, channel, thread, session_id, cwd, adapter, version, mode, model, model_option,
  title, project, worktree, branch, created_at, updated_at, closed_at`

function fromRow(row: Row): SessionRecord {
  const opt = <K extends string>(key: K, value: string | null) =>
    value === null ? {} : ({ [key]: value } as Record<K, string>)
  return {
    agent: row.agent,
    channel: row.channel,
    thread: row.thread,
    sessionId: row.session_id,
    cwd: row.cwd,
    ...opt('adapter', row.adapter),
    ...opt('version', row.version),
    ...opt('mode', row.mode),
    ...(row.model === null
      ? {}
      : { model: { value: row.model, ...opt('configId', row.model_option) } }),
    ...opt('title', row.title),
    ...opt('project', row.project),
    ...(row.worktree === null
      ? {}
      : { worktree: { path: row.worktree, branch: row.branch ?? '' } }),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.closed_at === null ? {} : { closedAt: row.closed_at }),
  }
}

/** The saved part of a record (what session/load and the settings need). */
export function savedPart(r: SessionRecord): SavedSession {
  const saved: SavedSession = { sessionId: r.sessionId, cwd: r.cwd }
  for (const key of ['adapter', 'version', 'mode', 'title', 'project'] as const)
    if (r[key] !== undefined) saved[key] = r[key]
  if (r.model !== undefined) saved.model = r.model
  if (r.worktree !== undefined) saved.worktree = r.worktree
  return saved
}

/**
 * Hosted agents' sessions in node.db, one per (agent, channel, thread) (see session-schema.ts):
 * kept to resume them after a restart, and to list them.
 */
export class AgentSessions {
  private readonly stmts: {
    get: Statement<[string, string, string], Row>
    set: Statement<[Row]>
    count: Statement<[string], { n: number }>
    all: Statement<[], Row>
    touch: Statement<[number, string, string, string]>
    close: Statement<[number, string, string, string]>
  }

  constructor(db: Db) {
    this.stmts = {
      get: db.prepare(
        `SELECT ${columns} FROM agent_sessions WHERE agent = ? AND channel = ? AND thread = ?`,
      ),
      // A session saved again (a new ACP session for the same thread: its first could not be
      // resumed) keeps its first date, title, project and worktree; one of a closed thread (its
      // worktree removed) starts afresh.
      set: db.prepare(
        `INSERT INTO agent_sessions (${columns}) VALUES (@agent, @channel, @thread, @session_id,
           @cwd, @adapter, @version, @mode, @model, @model_option, @title, @project, @worktree,
           @branch, @created_at, @updated_at, @closed_at)
         ON CONFLICT (agent, channel, thread) DO UPDATE SET session_id = excluded.session_id,
           cwd = excluded.cwd, adapter = excluded.adapter, version = excluded.version,
           mode = excluded.mode, model = excluded.model, model_option = excluded.model_option,
           title = coalesce(excluded.title, title),
           project = CASE WHEN closed_at IS NULL THEN coalesce(excluded.project, project) ELSE excluded.project END,
           worktree = CASE WHEN closed_at IS NULL THEN coalesce(excluded.worktree, worktree) ELSE excluded.worktree END,
           branch = CASE WHEN closed_at IS NULL THEN coalesce(excluded.branch, branch) ELSE excluded.branch END,
           updated_at = excluded.updated_at, closed_at = excluded.closed_at`,
      ),
      count: db.prepare(
        'SELECT count(*) AS n FROM agent_sessions WHERE agent = ? AND closed_at IS NULL',
      ),
      all: db.prepare(`SELECT ${columns} FROM agent_sessions ORDER BY updated_at DESC, rowid`),
      touch: db.prepare(
        'UPDATE agent_sessions SET updated_at = ? WHERE agent = ? AND channel = ? AND thread = ?',
      ),
      close: db.prepare(
        'UPDATE agent_sessions SET closed_at = ? WHERE agent = ? AND channel = ? AND thread = ?',
      ),
    }
  }

  /** The open session of `where`, if one is kept (a closed one is not resumed). */
  get(agent: string, where: SessionWhere): SessionRecord | undefined {
    const row = this.stmts.get.get(agent, where.channel, where.thread ?? '')
    return row === undefined || row.closed_at !== null ? undefined : fromRow(row)
  }

  /** Any session of `where`, closed ones included. */
  record(agent: string, where: SessionWhere): SessionRecord | undefined {
    const row = this.stmts.get.get(agent, where.channel, where.thread ?? '')
    return row === undefined ? undefined : fromRow(row)
  }

  set(agent: string, where: SessionWhere, s: SavedSession, now: number): void {
    const before = this.stmts.get.get(agent, where.channel, where.thread ?? '')
    this.stmts.set.run({
      agent,
      channel: where.channel,
      thread: where.thread ?? '',
      session_id: s.sessionId,
      cwd: s.cwd,
      adapter: s.adapter ?? null,
      version: s.version ?? null,
      mode: s.mode ?? null,
      model: s.model?.value ?? null,
      model_option: s.model?.configId ?? null,
      title: s.title ?? null,
      project: s.project ?? null,
      worktree: s.worktree?.path ?? null,
      branch: s.worktree?.branch ?? null,
      created_at: before?.created_at || now,
      updated_at: now,
      closed_at: null,
    })
  }

  /** A turn ran in it: its last activity is now. */
  touch(agent: string, where: SessionWhere, now: number): void {
    this.stmts.touch.run(now, agent, where.channel, where.thread ?? '')
  }

  close(agent: string, where: SessionWhere, now: number): void {
    this.stmts.close.run(now, agent, where.channel, where.thread ?? '')
  }

  /** How many open sessions this agent has (kept for resuming). */
  count(agent: string): number {
    return this.stmts.count.get(agent)!.n
  }

  /** Every session kept here, most recently used first. */
  all(): SessionRecord[] {
    return this.stmts.all.all().map(fromRow)
  }
}
