import type { Migration } from './db.js'
import { e2eEpochSinceMigration, e2eMigration, e2eSureHoldersMigration } from './e2e-store.js'
import {
  channelFirstsMigration,
  eventTablesMigration,
  keptVersionsMigration,
} from './event-schema.js'
import { threadSessionsMigration } from './session-schema.js'

/**
 * node.db: the event tables (grants, chat, profiles this node has seen or made), then the
 * outbox (an event is here before it is sent, until a hub answers) and a cursor per hub. The
 * event store's later migrations are appended in their turn (versions are positions).
 */
export const nodeMigrations: readonly Migration[] = [
  eventTablesMigration,
  (db) => {
    db.exec(`
      CREATE TABLE outbox (
        event_id TEXT PRIMARY KEY,
        raw TEXT NOT NULL,
        queued_at INTEGER NOT NULL
      );
      CREATE TABLE deliveries (
        event_id TEXT NOT NULL,
        hub TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('ok', 'refused')),
        message TEXT NOT NULL,
        at INTEGER NOT NULL,
        PRIMARY KEY (event_id, hub)
      );
      CREATE TABLE cursors (
        hub TEXT PRIMARY KEY,
        since INTEGER NOT NULL
      );
    `)
  },
  (db) => {
    // One ACP session per (agent, channel), kept so a restarted node resumes it (session/load).
    db.exec(`
      CREATE TABLE agent_sessions (
        agent TEXT NOT NULL,
        channel TEXT NOT NULL,
        session_id TEXT NOT NULL,
        cwd TEXT NOT NULL,
        PRIMARY KEY (agent, channel)
      );
    `)
  },
  (db) => {
    // What a session was pinned to, re-applied after every session/load (some adapters forget
    // it), and the adapter that made it. model_option: the ACP config option id that sets the
    // model; NULL with a model: session/set_model.
    db.exec(`
      ALTER TABLE agent_sessions ADD COLUMN adapter TEXT;
      ALTER TABLE agent_sessions ADD COLUMN version TEXT;
      ALTER TABLE agent_sessions ADD COLUMN mode TEXT;
      ALTER TABLE agent_sessions ADD COLUMN model TEXT;
      ALTER TABLE agent_sessions ADD COLUMN model_option TEXT;
    `)
  },
  (db) => {
    // Prompts taken by a hosted agent and not answered yet (see prompt-journal.ts). One row per
    // (prompt, agent): a prompt may mention several agents of this node.
    db.exec(`
      CREATE TABLE agent_prompts (
        event_id TEXT NOT NULL,
        agent TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('queued', 'running')),
        at INTEGER NOT NULL,
        PRIMARY KEY (event_id, agent)
      );
    `)
  },
  keptVersionsMigration,
  (db) => {
    // Which hub is known to hold which event (it answered OK true, or returned it): a node sends
    // an event of a private channel only to a hub that holds the channel's definition in effect.
    // The outbox still has every definition this node signed, replaced versions included: keep
    // those too (legacy, as the ones copied from events).
    db.exec(`
      CREATE TABLE hub_holds (
        event_id TEXT NOT NULL,
        hub TEXT NOT NULL,
        PRIMARY KEY (event_id, hub)
      );
      INSERT OR IGNORE INTO kept_versions (id, kind, created_at, raw, legacy)
        SELECT event_id, 34140, json_extract(raw, '$.created_at'), raw, 1 FROM outbox
        WHERE json_extract(raw, '$.kind') = 34140;
    `)
  },
  (db) => {
    // Where this node sends its person's notifications (kith notify; web devices' subscriptions)
    // and each notification per target: the primary key is what makes it once per event per
    // device, restarts included; pending rows are retried with backoff (notify/notifier.ts).
    db.exec(`
      CREATE TABLE notify_targets (
        id TEXT PRIMARY KEY,
        type TEXT NOT NULL CHECK (type IN ('webpush', 'ntfy', 'webhook', 'desktop')),
        url TEXT NOT NULL,
        classes TEXT NOT NULL,
        finished_after INTEGER NOT NULL,
        open_base TEXT,
        device TEXT,
        subscription TEXT,
        created_at INTEGER NOT NULL,
        last_ok INTEGER,
        last_error TEXT,
        last_error_at INTEGER,
        gone INTEGER NOT NULL DEFAULT 0
      );
      CREATE TABLE notify_deliveries (
        event_id TEXT NOT NULL,
        target TEXT NOT NULL,
        class TEXT NOT NULL,
        payload TEXT NOT NULL,
        state TEXT NOT NULL
          CHECK (state IN ('pending', 'sent', 'failed', 'withdrawn', 'coalesced')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_at INTEGER NOT NULL,
        until_at INTEGER NOT NULL,
        last_error TEXT,
        created_at INTEGER NOT NULL,
        sent_at INTEGER,
        PRIMARY KEY (event_id, target)
      );
      CREATE INDEX notify_due ON notify_deliveries (state, next_at);
    `)
  },
  threadSessionsMigration,
  // kith-e2e/1: epoch keys, who holds each, and events still sealed (e2e-store.ts).
  e2eMigration,
  (db) => {
    // A sealed fleet's message text goes to a third-party target only when asked for
    // (kith notify add --full-text); targets from before are sent the brief.
    db.exec('ALTER TABLE notify_targets ADD COLUMN full_text INTEGER NOT NULL DEFAULT 0')
  },
  e2eSureHoldersMigration,
  (db) => {
    // Issue 30: the authority kinds are fetched whole only on a first connect; after, from this
    // cursor (per hub), so many revocations cost a reconnect only what is new.
    db.exec('CREATE TABLE authority_cursors (hub TEXT PRIMARY KEY, since INTEGER NOT NULL)')
  },
  e2eEpochSinceMigration,
  // Issue 34: the node's grant book is rebuilt from node.db at start and after each CLI change
  // to grants or agents (GrantBook.reload), and its channel-use query grouped every `h` tag row:
  // ~0.4 s on a node.db of 100k channel messages, growing with the file. Kept as events are
  // stored instead, as hub.db does (event-schema.ts).
  channelFirstsMigration,
]
