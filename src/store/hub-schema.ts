import type { Migration } from './db.js'
import {
  channelFirstsMigration,
  coveringTagIndexMigration,
  eventStoreMigrations,
  orderedIndexesMigration,
} from './event-schema.js'

/**
 * Kinds whose acceptance does not wait on a person's storage quota: grants (4140), revocations
 * (4141) and channel definitions (34140). They carry authority, so a person at quota must still
 * be able to admit a device, revoke a key or remove someone from a private channel; each is
 * bounded otherwise (it needs authority to be accepted at all, and replaceable ones replace their
 * previous version). A held revocation (it revokes nothing yet) is the exception: it is checked
 * against the quota like any event (hub/event-limits.ts).
 */
export const quotaExemptKinds: ReadonlySet<number> = new Set([4140, 4141, 34140])

/** Kinds left out of `key_usage`: revocations are counted, since held ones pay the quota. */
export const usageUncountedKinds: ReadonlySet<number> = new Set([4140, 34140])

/**
 * hub.db: the event tables, then `key_usage`, what each author key has stored (events and UTF-8
 * bytes of their canonical JSON, exempt kinds left out), kept in the same transaction as the
 * events so quotas survive restarts. The migration counts what an older hub already stored. Then
 * the ordered indexes and the covering tag index (event-schema.ts), and `channel_firsts`
 * (event-schema.ts).
 */
export const hubMigrations: readonly Migration[] = [
  ...eventStoreMigrations,
  (db) => {
    db.exec(`
      CREATE TABLE key_usage (
        pubkey TEXT PRIMARY KEY,
        events INTEGER NOT NULL,
        bytes INTEGER NOT NULL
      ) WITHOUT ROWID;
      INSERT INTO key_usage (pubkey, events, bytes)
        SELECT pubkey, count(*), sum(length(CAST(raw AS BLOB))) FROM events
        WHERE kind NOT IN (4140, 4141, 34140) GROUP BY pubkey;
    `)
  },
  // Appended last (never reorder): ordered covering indexes and de-duplicated tag rows.
  orderedIndexesMigration,
  // The tag index with each row's seq (event-schema.ts).
  coveringTagIndexMigration,
  // Revocations count toward usage (held ones pay the quota): recount what is stored.
  (db) => {
    db.exec(`
      DELETE FROM key_usage;
      INSERT INTO key_usage (pubkey, events, bytes)
        SELECT pubkey, count(*), sum(length(CAST(raw AS BLOB))) FROM events
        WHERE kind NOT IN (4140, 34140) GROUP BY pubkey;
    `)
  },
  channelFirstsMigration,
]
