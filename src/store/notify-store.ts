import type { Db } from './db.js'

export type NotifyTargetType = 'webpush' | 'ntfy' | 'webhook' | 'desktop'

export interface NotifyTarget {
  id: string
  type: NotifyTargetType
  /** The endpoint: a Web Push endpoint, an ntfy topic URL, a webhook URL, `desktop`. */
  url: string
  classes: string[]
  finishedAfter: number
  /** Where links open (the web app's origin); undefined: this node's own web app. */
  openBase: string | undefined
  /** webpush: the subscribing device and its subscription (JSON). */
  device: string | undefined
  subscription: string | undefined
  createdAt: number
  lastOk: number | undefined
  lastError: string | undefined
  lastErrorAt: number | undefined
  /** The endpoint said it no longer exists (Web Push 404/410): nothing more goes to it. */
  gone: boolean
  /** ntfy, webhook: sent a sealed fleet's message text too (kith notify add --full-text). */
  fullText: boolean
}

export type NotifyState = 'pending' | 'sent' | 'failed' | 'withdrawn' | 'coalesced'

export interface NotifyDelivery {
  eventId: string
  target: string
  class: string
  payload: string
  state: NotifyState
  attempts: number
  nextAt: number
  /** After this (ms) it is not worth sending: a card's expiry, old news. */
  untilAt: number
  lastError: string | undefined
  createdAt: number
}

interface TargetRow {
  id: string
  type: NotifyTargetType
  url: string
  classes: string
  finished_after: number
  open_base: string | null
  device: string | null
  subscription: string | null
  created_at: number
  last_ok: number | null
  last_error: string | null
  last_error_at: number | null
  gone: number
  full_text: number
}

interface DeliveryRow {
  event_id: string
  target: string
  class: string
  payload: string
  state: NotifyState
  attempts: number
  next_at: number
  until_at: number
  last_error: string | null
  created_at: number
}

const target = (r: TargetRow): NotifyTarget => ({
  id: r.id,
  type: r.type,
  url: r.url,
  classes: JSON.parse(r.classes) as string[],
  finishedAfter: r.finished_after,
  openBase: r.open_base ?? undefined,
  device: r.device ?? undefined,
  subscription: r.subscription ?? undefined,
  createdAt: r.created_at,
  lastOk: r.last_ok ?? undefined,
  lastError: r.last_error ?? undefined,
  lastErrorAt: r.last_error_at ?? undefined,
  gone: r.gone !== 0,
  fullText: r.full_text !== 0,
})

const delivery = (r: DeliveryRow): NotifyDelivery => ({
  eventId: r.event_id,
  target: r.target,
  class: r.class,
  payload: r.payload,
  state: r.state,
  attempts: r.attempts,
  nextAt: r.next_at,
  untilAt: r.until_at,
  lastError: r.last_error ?? undefined,
  createdAt: r.created_at,
})

/**
 * node.db's notification tables: the targets (`kith notify add`, and web devices' push
 * subscriptions) and one row per (event, target). The CLI writes targets while `kith up` runs:
 * the node reads them afresh on every pass, so no restart and no socket call is needed.
 */
export class NotifyStore {
  constructor(private readonly db: Db) {}

  targets(): NotifyTarget[] {
    return this.db
      .prepare<[], TargetRow>('SELECT * FROM notify_targets ORDER BY created_at, id')
      .all()
      .map(target)
  }

  target(id: string): NotifyTarget | undefined {
    const row = this.db
      .prepare<[string], TargetRow>('SELECT * FROM notify_targets WHERE id = ?')
      .get(id)
    return row === undefined ? undefined : target(row)
  }

  /** Adds or replaces a target (a web device's newer subscription replaces its older one). */
  putTarget(
    t: Omit<NotifyTarget, 'lastOk' | 'lastError' | 'lastErrorAt' | 'gone' | 'fullText'> & {
      fullText?: boolean
    },
  ): void {
    this.db
      .prepare(
        `INSERT INTO notify_targets
           (id, type, url, classes, finished_after, open_base, device, subscription, created_at,
            full_text)
         VALUES (@id, @type, @url, @classes, @finishedAfter, @openBase, @device, @subscription,
           @createdAt, @fullText)
         ON CONFLICT(id) DO UPDATE SET type = excluded.type, url = excluded.url,
           classes = excluded.classes, finished_after = excluded.finished_after,
           open_base = excluded.open_base, subscription = excluded.subscription,
           created_at = excluded.created_at, full_text = excluded.full_text, gone = 0,
           last_error = NULL, last_error_at = NULL`,
      )
      .run({
        ...t,
        fullText: t.fullText === true ? 1 : 0,
        classes: JSON.stringify(t.classes),
        openBase: t.openBase ?? null,
        device: t.device ?? null,
        subscription: t.subscription ?? null,
      })
  }

  /** Removes a target and whatever it still had pending. */
  removeTarget(id: string): boolean {
    return this.db.transaction(() => {
      this.db
        .prepare(`DELETE FROM notify_deliveries WHERE target = ? AND state = 'pending'`)
        .run(id)
      return this.db.prepare('DELETE FROM notify_targets WHERE id = ?').run(id).changes > 0
    })()
  }

  markTarget(id: string, ok: boolean, message: string | undefined, at: number, gone = false): void {
    if (ok)
      this.db
        .prepare('UPDATE notify_targets SET last_ok = ?, last_error = NULL WHERE id = ?')
        .run(at, id)
    else
      this.db
        .prepare(
          'UPDATE notify_targets SET last_error = ?, last_error_at = ?, gone = ? WHERE id = ?',
        )
        .run(message ?? 'failed', at, gone ? 1 : 0, id)
  }

  /** Queues one notification for a target; false when this (event, target) was queued before. */
  add(
    eventId: string,
    targetId: string,
    cls: string,
    payload: string,
    nowMs: number,
    untilMs: number,
  ): boolean {
    return (
      this.db
        .prepare(
          `INSERT OR IGNORE INTO notify_deliveries
             (event_id, target, class, payload, state, next_at, until_at, created_at)
           VALUES (?, ?, ?, ?, 'pending', ?, ?, ?)`,
        )
        .run(eventId, targetId, cls, payload, nowMs, untilMs, nowMs).changes > 0
    )
  }

  /** Everything pending and due, oldest first. */
  due(nowMs: number, limit = 500): NotifyDelivery[] {
    return this.db
      .prepare<[number, number], DeliveryRow>(
        `SELECT * FROM notify_deliveries WHERE state = 'pending' AND next_at <= ?
         ORDER BY created_at, rowid LIMIT ?`,
      )
      .all(nowMs, limit)
      .map(delivery)
  }

  /** When the next pending notification is due (ms), if any. */
  nextDue(): number | undefined {
    const row = this.db
      .prepare<[], { at: number | null }>(
        `SELECT MIN(next_at) AS at FROM notify_deliveries WHERE state = 'pending'`,
      )
      .get()
    return row?.at ?? undefined
  }

  deliveriesOf(eventId: string): NotifyDelivery[] {
    return this.db
      .prepare<[string], DeliveryRow>('SELECT * FROM notify_deliveries WHERE event_id = ?')
      .all(eventId)
      .map(delivery)
  }

  setState(
    eventId: string,
    targetId: string,
    state: NotifyState,
    nowMs: number,
    error?: string,
  ): void {
    this.db
      .prepare(
        `UPDATE notify_deliveries SET state = ?, last_error = ?, sent_at = ?
         WHERE event_id = ? AND target = ?`,
      )
      .run(state, error ?? null, state === 'sent' ? nowMs : null, eventId, targetId)
  }

  retryLater(eventId: string, targetId: string, nextAt: number, error: string): void {
    this.db
      .prepare(
        `UPDATE notify_deliveries SET attempts = attempts + 1, next_at = ?, last_error = ?
         WHERE event_id = ? AND target = ?`,
      )
      .run(nextAt, error, eventId, targetId)
  }

  /** Per target: how many are pending, failed, sent. */
  counts(): Map<string, { pending: number; failed: number; sent: number }> {
    const rows = this.db
      .prepare<[], { target: string; state: NotifyState; n: number }>(
        `SELECT target, state, count(*) AS n FROM notify_deliveries
         WHERE state IN ('pending', 'failed', 'sent') GROUP BY target, state`,
      )
      .all()
    const out = new Map<string, { pending: number; failed: number; sent: number }>()
    for (const r of rows) {
      const c = out.get(r.target) ?? { pending: 0, failed: 0, sent: 0 }
      c[r.state as 'pending' | 'failed' | 'sent'] = r.n
      out.set(r.target, c)
    }
    return out
  }
}
