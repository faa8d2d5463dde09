import type { Migration } from './db.js'

/**
 * Event store schema. `raw` keeps the canonical JSON so queries send it without re-encoding.
 * `rkey` is the replace key of replaceable/addressable events. Only single-letter tags are
 * indexed, since NIP-01 filters can only name those.
 */
export const eventTablesMigration: Migration = (db) => {
  db.exec(`
    CREATE TABLE events (
      seq INTEGER PRIMARY KEY,
      id TEXT NOT NULL UNIQUE,
      pubkey TEXT NOT NULL,
      kind INTEGER NOT NULL,
      created_at INTEGER NOT NULL,
      rkey TEXT,
      raw TEXT NOT NULL
    );
    CREATE INDEX events_created ON events(created_at DESC);
    CREATE INDEX events_pubkey ON events(pubkey, created_at DESC);
    CREATE INDEX events_kind ON events(kind, created_at DESC);
    CREATE INDEX events_rkey ON events(rkey) WHERE rkey IS NOT NULL;
    CREATE TABLE tags (
      seq INTEGER NOT NULL,
      name TEXT NOT NULL,
      value TEXT NOT NULL,
      created_at INTEGER NOT NULL
    );
    CREATE INDEX tags_lookup ON tags(name, value, created_at DESC);
    CREATE INDEX tags_seq ON tags(seq);
  `)
}

/**
 * Every version of a channel definition (kind 34140), including those NIP-01 replaces: who may
 * define a channel depends on the whole set of its definitions (kith-channels), not on the newest
 * of each author. Never served to readers (they get the newest of each address, as NIP-01 says);
 * read back only to rebuild the channel book. Filled from the events already stored, marked
 * `legacy`: their earlier versions are gone, so they are taken as admitted by the rules of
 * their time (kith-channels, "What a hub or node holds").
 */
export const keptVersionsMigration: Migration = (db) => {
  db.exec(`
    CREATE TABLE kept_versions (
      id TEXT PRIMARY KEY,
      kind INTEGER NOT NULL,
      created_at INTEGER NOT NULL,
      raw TEXT NOT NULL,
      legacy INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX kept_versions_kind ON kept_versions(kind, created_at);
    INSERT INTO kept_versions (id, kind, created_at, raw, legacy)
      SELECT id, kind, created_at, raw, 1 FROM events WHERE kind = 34140;
  `)
}

/** The index whose presence tells the store `orderedIndexesMigration` has run. */
export const orderedIndexName = 'events_created_id'

/**
 * Indexes that give NIP-01 order (created_at descending, then id) with no sort step and cover
 * what a paged query reads (seq, created_at, id), in place of the (…, created_at) ones; and one
 * tag row per (event, name, value), so a tag query can join tags to events without returning an
 * event twice (event-store.ts, buildQuery). Issue 18: window·500 and tag·50 REQs were 3–5× slower
 * than strfry's, each sorting every match.
 */
export const orderedIndexesMigration: Migration = (db) => {
  db.exec(`
    CREATE INDEX IF NOT EXISTS ${orderedIndexName} ON events(created_at DESC, id);
    CREATE INDEX IF NOT EXISTS events_pubkey_id ON events(pubkey, created_at DESC, id);
    CREATE INDEX IF NOT EXISTS events_kind_id ON events(kind, created_at DESC, id);
    DROP INDEX IF EXISTS events_created;
    DROP INDEX IF EXISTS events_pubkey;
    DROP INDEX IF EXISTS events_kind;
    DELETE FROM tags WHERE rowid NOT IN (SELECT min(rowid) FROM tags GROUP BY seq, name, value);
  `)
}

/**
 * The tag index carries each row's `seq`, so a tag query (the join of a one-value tag filter, and
 * the `seq IN (SELECT seq FROM tags …)` of other tag filters and of private channels hidden from
 * a reader) reads the index alone, without a lookup of each tag row in its table (issue 18).
 * Tag rows do not carry their event's id, so sqlite still sorts ties of created_at by id: the id
 * in the index (32 bytes a row) made a tag·50 REQ 23% quicker in the store but each insert ~30%
 * slower (docs/performance.md, session 9).
 */
export const coveringTagIndexMigration: Migration = (db) => {
  db.exec(`
    DROP INDEX IF EXISTS tags_lookup;
    CREATE INDEX tags_lookup ON tags(name, value, created_at DESC, seq);
  `)
}

/** The table that keeps each key's earliest event in each channel (`channelFirstsMigration`). */
export const channelFirstsTable = 'channel_firsts'

/**
 * Each key's earliest event in each channel (`h` tag), kept as events are stored, so a hub's
 * start-up (and a node's grant book, node-schema.ts) reads ~one row per (channel, key) instead of
 * grouping every `h` tag row joined to its event: that query took 2.6–3.9 s of the hub's start on
 * a 1M-event store (issue 34, docs/performance.md). A row outlives the event that made it (a
 * replaced version): the channel book, which this rebuilds, never forgets evidence of use either
 * (channels.ts noteEvent).
 * It can run again on a file that has the table (a schema version set back): it refills it.
 */
export const channelFirstsMigration: Migration = (db) => {
  db.exec(`
    CREATE TABLE IF NOT EXISTS ${channelFirstsTable} (
      channel TEXT NOT NULL,
      pubkey TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      PRIMARY KEY (channel, pubkey)
    ) WITHOUT ROWID;
    DELETE FROM ${channelFirstsTable};
    INSERT INTO ${channelFirstsTable} (channel, pubkey, created_at)
      SELECT t.value, e.pubkey, MIN(t.created_at) FROM tags t JOIN events e ON e.seq = t.seq
      WHERE t.name = 'h' GROUP BY t.value, e.pubkey;
  `)
}

/** A hub's event store (hub.db). node.db appends its own tables (node-schema.ts). */
export const eventStoreMigrations: readonly Migration[] = [
  eventTablesMigration,
  keptVersionsMigration,
]
