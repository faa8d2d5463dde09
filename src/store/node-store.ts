import { join } from 'node:path'
import type { Statement } from 'better-sqlite3'
import type { NostrEvent } from '../events/event.js'
import { homeFiles } from '../identity/home.js'
import { openDatabase, type Db } from './db.js'
import { E2eStore } from './e2e-store.js'
import { EventStore } from './event-store.js'
import { nodeMigrations } from './node-schema.js'
import { NodeReads } from './node-reads.js'
import { NotifyStore } from './notify-store.js'
import { PromptJournal } from './prompt-journal.js'
import type { SavedSession } from './saved-session.js'
import { AgentSessions, savedPart, type SessionWhere } from './agent-sessions.js'

export const nodeDbFile = homeFiles.nodeDb

export interface Delivery {
  hub: string
  state: 'ok' | 'refused'
  message: string
}

/** node.db: events, the outbox with per-hub delivery results, and catch-up cursors. */
export class NodeStore {
  readonly events: EventStore
  /** Reads of `events` as the node makes them: parsed, with its own limits. */
  readonly reads: NodeReads
  readonly prompts: PromptJournal
  readonly notify: NotifyStore
  /** Hosted agents' sessions, one per thread. */
  readonly sessions: AgentSessions
  readonly e2e: E2eStore
  /**
   * The sealed form of an event this node made (kith-e2e/1), when it has one: node.db keeps the
   * opened event, the outbox sends the sealed one. Set by the node; absent: events go as made.
   */
  wireOf: ((event: NostrEvent) => NostrEvent | undefined) | undefined
  private readonly db: Db
  private readonly stmts: {
    enqueue: Statement<[string, string, number]>
    pendingFor: Statement<[string], { raw: string }>
    deliver: Statement<[string, string, string, string, number]>
    deliveries: Statement<[string], Delivery>
    cursor: Statement<[string], { since: number }>
    setCursor: Statement<[string, number]>
    cursors: Statement<[], { hub: string; since: number }>
    authorityCursor: Statement<[string], { since: number }>
    setAuthorityCursor: Statement<[string, number]>
    refused: Statement<[], { event_id: string; hub: string; message: string; raw: string }>
    outboxSize: Statement<[], { n: number }>
    markHeld: Statement<[string, string]>
    holds: Statement<[{ id: string; hub: string }], { one: number }>
  }

  constructor(home: string) {
    this.db = openDatabase(join(home, nodeDbFile), nodeMigrations)
    this.events = new EventStore(this.db)
    this.reads = new NodeReads(this.events)
    this.prompts = new PromptJournal(this.db)
    this.notify = new NotifyStore(this.db)
    this.sessions = new AgentSessions(this.db)
    this.e2e = new E2eStore(this.db, this.events)
    const db = this.db
    this.stmts = {
      enqueue: db.prepare(
        'INSERT OR IGNORE INTO outbox (event_id, raw, queued_at) VALUES (?, ?, ?)',
      ),
      // Everything in the outbox that this hub has not answered yet, oldest first.
      pendingFor: db.prepare(
        `SELECT raw FROM outbox o WHERE NOT EXISTS
           (SELECT 1 FROM deliveries d WHERE d.event_id = o.event_id AND d.hub = ?)
         ORDER BY queued_at, rowid`,
      ),
      deliver: db.prepare(
        'INSERT OR REPLACE INTO deliveries (event_id, hub, state, message, at) VALUES (?, ?, ?, ?, ?)',
      ),
      deliveries: db.prepare('SELECT hub, state, message FROM deliveries WHERE event_id = ?'),
      cursor: db.prepare('SELECT since FROM cursors WHERE hub = ?'),
      setCursor: db.prepare(
        'INSERT INTO cursors (hub, since) VALUES (?, ?) ON CONFLICT(hub) DO UPDATE SET since = excluded.since',
      ),
      cursors: db.prepare('SELECT hub, since FROM cursors ORDER BY hub'),
      authorityCursor: db.prepare('SELECT since FROM authority_cursors WHERE hub = ?'),
      setAuthorityCursor: db.prepare(
        'INSERT INTO authority_cursors (hub, since) VALUES (?, ?) ON CONFLICT(hub) DO UPDATE SET since = excluded.since',
      ),
      refused: db.prepare(
        `SELECT d.event_id, d.hub, d.message, o.raw FROM deliveries d JOIN outbox o USING (event_id)
         WHERE d.state = 'refused' ORDER BY d.at DESC LIMIT 50`,
      ),
      outboxSize: db.prepare('SELECT count(*) AS n FROM outbox'),
      markHeld: db.prepare('INSERT OR IGNORE INTO hub_holds (event_id, hub) VALUES (?, ?)'),
      holds: db.prepare(
        `SELECT 1 AS one FROM hub_holds WHERE event_id = @id AND hub = @hub
         UNION ALL SELECT 1 FROM deliveries WHERE event_id = @id AND hub = @hub AND state = 'ok'
         LIMIT 1`,
      ),
    }
  }

  /**
   * Stores an event this node made and queues it for every hub, in one transaction: after this
   * returns the event survives a crash and will be sent.
   */
  enqueue(event: NostrEvent, now: number): void {
    const raw = JSON.stringify(event)
    const wire = this.wireOf?.(event)
    this.db.transaction(() => {
      this.events.insertBatch([event], [raw])
      this.stmts.enqueue.run(event.id, wire === undefined ? raw : JSON.stringify(wire), now)
    })()
  }

  pendingFor(hub: string): NostrEvent[] {
    return this.stmts.pendingFor.all(hub).map((r) => JSON.parse(r.raw) as NostrEvent)
  }

  /** Pending (event, hub) pairs for these hubs. */
  outboxDepth(hubs: readonly string[]): number {
    return hubs.reduce((n, hub) => n + this.stmts.pendingFor.all(hub).length, 0)
  }

  /**
   * Drops from the outbox the grants and revocations of any fleet but `fleet` (left behind when
   * this machine joined another person's fleet); returns how many.
   */
  dropOtherFleets(fleet: string): number {
    const rows = this.db.prepare('SELECT event_id, raw FROM outbox').all() as {
      event_id: string
      raw: string
    }[]
    const drop = this.db.prepare('DELETE FROM outbox WHERE event_id = ?')
    let n = 0
    for (const r of rows) {
      const e = JSON.parse(r.raw) as NostrEvent
      const tag = e.tags.find((t) => t[0] === 'fleet')?.[1]
      if (tag !== undefined && tag !== fleet) n += drop.run(r.event_id).changes
    }
    return n
  }

  outboxSize(): number {
    return this.stmts.outboxSize.get()!.n
  }

  recordDelivery(eventId: string, hub: string, ok: boolean, message: string, now: number): void {
    this.stmts.deliver.run(eventId, hub, ok ? 'ok' : 'refused', message, now)
  }

  /** Records that `hub` holds these events: it answered OK true, or returned them in a query. */
  markHeld(eventIds: readonly string[], hub: string): void {
    if (eventIds.length === 0) return
    this.db.transaction(() => {
      for (const id of eventIds) this.stmts.markHeld.run(id, hub)
    })()
  }

  /** Is `hub` known to hold the event: marked held, or it accepted it from this outbox. */
  hubHolds(eventId: string, hub: string): boolean {
    return this.stmts.holds.get({ id: eventId, hub }) !== undefined
  }

  deliveries(eventId: string): Delivery[] {
    return this.stmts.deliveries.all(eventId)
  }

  refusals(): { eventId: string; hub: string; message: string; event: NostrEvent }[] {
    return this.stmts.refused.all().map((r) => ({
      eventId: r.event_id,
      hub: r.hub,
      message: r.message,
      event: JSON.parse(r.raw) as NostrEvent,
    }))
  }

  /** The open session of a channel's thread (a channel name alone: its main thread). */
  agentSession(agent: string, where: SessionWhere | string): SavedSession | undefined {
    const r = this.sessions.get(agent, typeof where === 'string' ? { channel: where } : where)
    return r === undefined ? undefined : savedPart(r)
  }

  setAgentSession(agent: string, where: SessionWhere | string, s: SavedSession): void {
    const w = typeof where === 'string' ? { channel: where } : where
    this.sessions.set(agent, w, s, Math.floor(Date.now() / 1000))
  }

  /** How many open sessions (threads) this agent has (kept for resuming). */
  agentSessionCount(agent: string): number {
    return this.sessions.count(agent)
  }

  cursor(hub: string): number | undefined {
    return this.stmts.cursor.get(hub)?.since
  }

  setCursor(hub: string, since: number): void {
    this.stmts.setCursor.run(hub, since)
  }

  /** Where the next fetch of the authority kinds from `hub` starts (hub-link.ts). */
  authorityCursor(hub: string): number | undefined {
    return this.stmts.authorityCursor.get(hub)?.since
  }

  setAuthorityCursor(hub: string, since: number): void {
    this.stmts.setAuthorityCursor.run(hub, since)
  }

  cursors(): { hub: string; since: number }[] {
    return this.stmts.cursors.all()
  }

  /**
   * The channels this node knows: those with chat messages (kind 9, their `h`), with how many
   * and the newest one's date, and those only defined (kind 34140, their `d`), newest first.
   */
  channels(): { name: string; messages: number; last: number | null }[] {
    const rows = this.db
      .prepare<[], { name: string; messages: number; last: number | null }>(
        `SELECT t.value AS name, SUM(e.kind = 9) AS messages, MAX(CASE WHEN e.kind = 9 THEN e.created_at END) AS last
         FROM tags t JOIN events e ON e.seq = t.seq
         WHERE (t.name = 'h' AND e.kind = 9) OR (t.name = 'd' AND e.kind = 34140)
         GROUP BY t.value ORDER BY last DESC`,
      )
      .all()
    return rows
  }

  close(): void {
    this.db.close()
  }
}
