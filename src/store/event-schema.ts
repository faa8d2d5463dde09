import type { Migration } from './db.js'

/**
 * Event store schema. `raw` keeps the canonical JSON so queries send it without re-encoding.
 * `rkey` is the replace key of replaceable/addressable events. Only single-letter tags are
 * indexed, since NIP-01 filters can only name those.
 */
export const eventStoreMigrations: readonly Migration[] = [
  (db) => {
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
  },
]
