import type { Statement } from 'better-sqlite3'
import type { Epoch } from '../events/e2e-epoch.js'
import type { NostrEvent } from '../events/event.js'
import type { Db, Migration } from './db.js'
import type { EventStore } from './event-store.js'
import type { Holders } from '../grants/e2e-keyring.js'

/**
 * node.db's kith-e2e/1 tables: the epoch keys this node holds (for itself and the agents it
 * hosts), who each epoch was sent to (every envelope's `p`, seen whether or not it was ours: it
 * decides rotation), and the stored events still sealed because their key has not arrived.
 * Keys sit beside the device key's file in KITH_HOME (0700): whoever reads node.db reads the
 * chat anyway, since node.db keeps opened events.
 */
export const e2eMigration: Migration = (db) => {
  db.exec(`
    CREATE TABLE e2e_epochs (
      id TEXT PRIMARY KEY,
      channel TEXT NOT NULL,
      number INTEGER NOT NULL,
      key BLOB NOT NULL
    );
    CREATE INDEX e2e_epochs_channel ON e2e_epochs(channel, number);
    CREATE TABLE e2e_holders (
      epoch_id TEXT NOT NULL,
      channel TEXT NOT NULL,
      number INTEGER NOT NULL,
      pubkey TEXT NOT NULL,
      PRIMARY KEY (epoch_id, pubkey)
    );
    CREATE INDEX e2e_holders_channel ON e2e_holders(channel);
    CREATE TABLE e2e_sealed (
      event_id TEXT PRIMARY KEY,
      epoch_id TEXT NOT NULL
    );
    CREATE INDEX e2e_sealed_epoch ON e2e_sealed(epoch_id);
  `)
}

/**
 * Which holders are known, not claimed (kith-e2e/1, "Envelopes"): this node sent them the key,
 * opened it for them, or they signed an envelope of it themselves. Rows from before were all
 * claims taken as known, as they were then.
 */
export const e2eSureHoldersMigration: Migration = (db) => {
  db.exec('ALTER TABLE e2e_holders ADD COLUMN sure INTEGER NOT NULL DEFAULT 1')
}

/**
 * When each held epoch began as far as this node knows (kith-e2e/1, "Periodic rotation"): the
 * earliest envelope that brought it, or when it was made here. Epochs held before this are
 * counted from the upgrade, so they are replaced one period later.
 */
export const e2eEpochSinceMigration: Migration = (db) => {
  db.exec('ALTER TABLE e2e_epochs ADD COLUMN since INTEGER')
  db.prepare('UPDATE e2e_epochs SET since = ?').run(Math.floor(Date.now() / 1000))
}

interface EpochRow {
  id: string
  channel: string
  number: number
  key: Buffer
  since: number | null
}

export class E2eStore {
  private readonly s: {
    addEpoch: Statement<[string, string, number, Buffer, number | null]>
    earlier: Statement<[number, string, number]>
    epoch: Statement<[string], EpochRow>
    epochsOf: Statement<[string], EpochRow>
    channels: Statement<[], { channel: string }>
    addHolder: Statement<[string, string, number, string, number]>
    holdersOf: Statement<
      [string],
      { epoch_id: string; number: number; pubkey: string; sure: number }
    >
    markSealed: Statement<[string, string]>
    sealedFor: Statement<[string], { event_id: string }>
    unseal: Statement<[string]>
  }

  constructor(
    private readonly db: Db,
    /** node.db's events (the same database): an opened event replaces its sealed form there. */
    private readonly events: EventStore,
  ) {
    this.s = {
      addEpoch: db.prepare(
        'INSERT OR IGNORE INTO e2e_epochs (id, channel, number, key, since) VALUES (?, ?, ?, ?, ?)',
      ),
      earlier: db.prepare(
        'UPDATE e2e_epochs SET since = ? WHERE id = ? AND (since IS NULL OR since > ?)',
      ),
      epoch: db.prepare('SELECT id, channel, number, key, since FROM e2e_epochs WHERE id = ?'),
      epochsOf: db.prepare(
        'SELECT id, channel, number, key, since FROM e2e_epochs WHERE channel = ? ORDER BY number, id',
      ),
      channels: db.prepare('SELECT DISTINCT channel FROM e2e_epochs ORDER BY channel'),
      addHolder: db.prepare(
        `INSERT INTO e2e_holders (epoch_id, channel, number, pubkey, sure) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (epoch_id, pubkey) DO UPDATE SET sure = max(sure, excluded.sure)`,
      ),
      holdersOf: db.prepare(
        'SELECT epoch_id, number, pubkey, sure FROM e2e_holders WHERE channel = ? ORDER BY epoch_id',
      ),
      markSealed: db.prepare('INSERT OR IGNORE INTO e2e_sealed (event_id, epoch_id) VALUES (?, ?)'),
      sealedFor: db.prepare('SELECT event_id FROM e2e_sealed WHERE epoch_id = ?'),
      unseal: db.prepare('DELETE FROM e2e_sealed WHERE event_id = ?'),
    }
  }

  /** Keeps an epoch's key; false when it was already held. */
  addEpoch(epoch: Epoch): boolean {
    const since = epoch.since ?? null
    const added =
      this.s.addEpoch.run(epoch.id, epoch.channel, epoch.number, Buffer.from(epoch.key), since)
        .changes > 0
    if (!added && since !== null) this.s.earlier.run(since, epoch.id, since)
    return added
  }

  epoch(id: string): Epoch | undefined {
    const r = this.s.epoch.get(id)
    return r === undefined ? undefined : toEpoch(r)
  }

  /** The epochs of `channel` whose keys are held here, oldest number first. */
  epochsOf(channel: string): Epoch[] {
    return this.s.epochsOf.all(channel).map(toEpoch)
  }

  /** The channels this node holds any epoch of. */
  channelsHeld(): string[] {
    return this.s.channels.all().map((r) => r.channel)
  }

  /**
   * Notes that an envelope of this epoch went to each of `pubkeys`; `sure` when it is known to
   * have (see e2eSureHoldersMigration), not only claimed by another's envelope.
   */
  addHolders(
    epochId: string,
    channel: string,
    number: number,
    pubkeys: readonly string[],
    sure: boolean,
  ): void {
    for (const p of pubkeys) this.s.addHolder.run(epochId, channel, number, p, sure ? 1 : 0)
  }

  /** Every epoch of `channel` an envelope was seen for, with the keys it went to. */
  holdersOf(channel: string): Map<string, Holders> {
    const out = new Map<string, Holders>()
    for (const r of this.s.holdersOf.all(channel)) {
      let e = out.get(r.epoch_id)
      if (e === undefined)
        out.set(r.epoch_id, (e = { number: r.number, holders: new Set(), sure: new Set() }))
      e.holders.add(r.pubkey)
      if (r.sure === 1) e.sure.add(r.pubkey)
    }
    return out
  }

  /** A stored event that is still sealed, waiting for its epoch's key. */
  markSealed(eventId: string, epochId: string): void {
    this.s.markSealed.run(eventId, epochId)
  }

  sealedFor(epochId: string): string[] {
    return this.s.sealedFor.all(epochId).map((r) => r.event_id)
  }

  /**
   * Replaces a stored sealed event by its opened form (same id), re-indexing its tags, so every
   * reader of node.db (history, threads, open prompts) sees it as any other event.
   */
  replaceOpened(opened: NostrEvent): void {
    this.db.transaction(() => {
      this.s.unseal.run(opened.id)
      // The tag index's rule is the event store's (EventStore.replaceRaw), not restated here.
      this.events.replaceRaw(opened)
    })()
  }
}

function toEpoch(r: EpochRow): Epoch {
  return {
    id: r.id,
    channel: r.channel,
    number: r.number,
    key: new Uint8Array(r.key),
    ...(r.since === null ? {} : { since: r.since }),
  }
}
