import type { NostrEvent } from '../events/event.js'
import { quorumMax } from '../events/agent-policy.js'
import { Kind } from '../events/kinds.js'
import {
  boundPayload,
  openPushSubscription,
  parsePushSubscription,
  type PushPayload,
} from '../events/push.js'
import type { NotifyDelivery, NotifyStore, NotifyTarget } from '../store/notify-store.js'
import {
  classify,
  waitingTally,
  withDecision,
  withdrawRefusal,
  type ClassifyContext,
  type Notice,
} from './classify.js'
import { sendTo, type SendContext, type SendResult } from './senders.js'
import { backoffMs } from '../link/backoff.js'

export interface NotifierOptions extends SendContext {
  store: NotifyStore
  ctx: ClassifyContext
  /** This node's device key: push subscriptions are sealed to it. */
  deviceSecret: Uint8Array
  devicePubkey: string
  log: (line: string) => void
  /**
   * A burst is gathered until nothing new has come for this long (at most `maxGatherMs` from
   * its first notice) before a pass sends it.
   */
  coalesceMs?: number
  /** Tests send through this instead (never set in use). */
  send?: typeof sendTo
}

/** More than this many due for one target in one pass become one summary. */
export const coalesceAbove = 3
/** Attempts before a notification is given up (about 10 minutes of backoff). */
export const maxAttempts = 9
const firstRetryMs = 1_000
/** The delivery id of a quorum card's notification once `allowed` people allowed it. */
const tallyId = (card: string, allowed: number) => `tally:${card}:${allowed}`

/** A withdrawal is worth sending for as long as a card's notification may stay up. */
const withdrawWorthMs = 24 * 3600_000
const maxRetryMs = 5 * 60_000

/** The target id of a web device's subscription: one per device. */
export const webTargetId = (device: string) => `web-${device.slice(0, 12)}`

function backoff(attempts: number): number {
  return backoffMs(attempts, { firstMs: firstRetryMs, maxMs: maxRetryMs, jitter: [0.75, 1.25] })
}

/** The longest a burst waits for company, however steadily it keeps coming. */
const maxGatherMs = 1_000

/**
 * The node's notifications (kith-notify/1): it reads what the node admits, queues in node.db
 * one row per (event, target) — so a notification goes once per event per device, restarts
 * included — and sends in passes: a burst gathered until it pauses, more than three at once to
 * a target folded into one summary, failures retried with backoff and shown in `kith status`.
 * A card answered anywhere is withdrawn: not sent if still queued, closed on web devices if sent.
 */
export class Notifier {
  private timer: NodeJS.Timeout | undefined
  private timerAt = Infinity
  /** The pass that sends the burst being gathered, and when its first notice came. */
  private gather: NodeJS.Timeout | undefined
  private burstFrom: number | undefined
  private running: Promise<void> | undefined
  private again = false
  private stopped = false
  private readonly coalesceMs: number
  private readonly send: typeof sendTo

  constructor(private readonly opts: NotifierOptions) {
    this.coalesceMs = opts.coalesceMs ?? 150
    this.send = opts.send ?? sendTo
    this.schedule(Date.now())
  }

  /** Every event the node admits and stores (or makes) passes here. */
  observe(event: NostrEvent): void {
    if (this.stopped) return
    try {
      if (event.kind === Kind.PushSubscription) this.subscription(event)
      else if (event.kind === Kind.PermissionDecision) this.withdraw(event)
      else {
        const notice = classify(event, this.opts.ctx)
        if (notice !== undefined) this.queue(notice)
      }
    } catch (err) {
      this.opts.log(
        `notify: could not read ${event.kind} ${event.id.slice(0, 12)}…: ${(err as Error).message}`,
      )
    }
  }

  private targetsFor(notice: Notice): NotifyTarget[] {
    return this.opts.store
      .targets()
      .filter(
        (t) =>
          !t.gone &&
          t.classes.includes(notice.class) &&
          (notice.class !== 'finished' || (notice.ranSeconds ?? 0) >= t.finishedAfter),
      )
  }

  private queue(notice: Notice): void {
    const nowMs = Date.now()
    const payload = JSON.stringify(boundPayload(notice.payload))
    let added = false
    for (const t of this.targetsFor(notice)) {
      if (t.type === 'webpush' && !this.stillMine(t)) continue
      added =
        this.opts.store.add(
          notice.eventId,
          t.id,
          notice.class,
          payload,
          nowMs,
          notice.until * 1000,
        ) || added
    }
    if (added) this.gatherBurst(nowMs)
  }

  /**
   * Events of one burst (five mentions sent at once) reach the node a few at a time, each after
   * its own verification: the pass waits until they pause, so they fold into one summary.
   */
  private gatherBurst(nowMs: number): void {
    if (this.stopped) return
    this.burstFrom ??= nowMs
    const at = Math.min(nowMs + this.coalesceMs, this.burstFrom + maxGatherMs)
    clearTimeout(this.gather)
    this.gather = setTimeout(
      () => {
        this.gather = undefined
        this.burstFrom = undefined
        void this.pass()
      },
      Math.max(0, at - Date.now()),
    )
    this.gather.unref()
  }

  /** A web device's target stays only while the device is a member of this node's person. */
  private stillMine(t: NotifyTarget): boolean {
    if (t.device === undefined) return true
    if (this.opts.ctx.personOf(t.device) === this.opts.ctx.person) return true
    this.opts.store.removeTarget(t.id)
    this.opts.log(`notify: dropped ${t.id}: its device is no longer this person's`)
    return false
  }

  private subscription(event: NostrEvent): void {
    const sub = parsePushSubscription(event)
    const id = webTargetId(sub.device)
    const existing = this.opts.store.target(id)
    if (existing !== undefined && existing.createdAt > sub.createdAt) return
    if (sub.sender !== this.opts.devicePubkey) {
      // The device moved to another sender: this one stops at once.
      if (existing !== undefined) {
        this.opts.store.removeTarget(id)
        this.opts.log(`notify: ${id} now pushes through another node`)
      }
      return
    }
    const name = this.opts.ctx.nameOf(sub.device)
    const mine =
      this.opts.ctx.mayPushThrough?.(sub.device, sub.sender, this.opts.ctx.now()) ??
      this.opts.ctx.personOf(sub.device) === this.opts.ctx.person
    if (!mine) {
      // Another person's device asking for this person's notifications: never.
      this.opts.log(
        `notify: ignored a push subscription from ${name}: not a device of this node's person`,
      )
      return
    }
    const body = openPushSubscription(event, this.opts.deviceSecret)
    if (body.off === true) {
      if (this.opts.store.removeTarget(id)) this.opts.log(`notify: ${name} turned push off`)
      return
    }
    this.opts.store.putTarget({
      id,
      type: 'webpush',
      url: body.subscription.endpoint,
      classes: body.classes,
      finishedAfter: body.finishedAfter,
      openBase: undefined,
      device: sub.device,
      subscription: JSON.stringify(body.subscription),
      createdAt: sub.createdAt,
    })
    this.opts.log(`notify: ${name} receives ${body.classes.join(', ') || 'nothing'} by Web Push`)
  }

  /**
   * A decision the card's host would act on answers it: nothing more about it goes out, and web
   * devices close it. A quorum card is answered once enough people allowed it (or an approver
   * rejected it); an allow that leaves it waiting replaces its notification with the tally.
   * Any other decision (withdrawRefusal) changes nothing here.
   */
  private withdraw(decision: NostrEvent): void {
    const card = decision.tags.find((t) => t[0] === 'e')?.[1]
    if (card === undefined) return
    const request = this.opts.ctx.event(card)
    if (request === undefined || request.kind !== Kind.PermissionRequest) return
    const refusal = withdrawRefusal(decision, request, this.opts.ctx)
    if (refusal !== undefined) {
      if (this.cardDeliveries(card).length > 0) {
        this.opts.log(
          `notify: a decision ${decision.id.slice(0, 12)}… on card ${card.slice(0, 12)}… withdraws nothing: ${refusal}`,
        )
        if (waitingTally(decision, request, this.opts.ctx) !== undefined)
          this.retally(decision, request)
      }
      return
    }
    const nowMs = Date.now()
    let added = false
    const told = new Set<string>()
    for (const d of this.cardDeliveries(card)) {
      if (d.state === 'pending') this.opts.store.setState(d.eventId, d.target, 'withdrawn', nowMs)
      else if (d.state === 'sent' || d.state === 'coalesced') {
        if (told.has(d.target)) continue
        told.add(d.target)
        const t = this.opts.store.target(d.target)
        // The device that answered has closed its own notification already.
        if (t?.type !== 'webpush' || t.gone || t.device === decision.pubkey) continue
        const payload: PushPayload = { type: 'withdraw', tag: card }
        added =
          this.opts.store.add(
            `withdraw:${card}`,
            t.id,
            'withdraw',
            JSON.stringify(payload),
            nowMs,
            nowMs + withdrawWorthMs,
          ) || added
      }
    }
    if (added) this.schedule(nowMs)
  }

  /**
   * A card's deliveries: its own, and those of the tallies that replaced it (`retally`), which
   * carry the card's id as their tag.
   */
  private cardDeliveries(card: string): NotifyDelivery[] {
    const out = [...this.opts.store.deliveriesOf(card)]
    for (let k = 1; k <= quorumMax; k++) out.push(...this.opts.store.deliveriesOf(tallyId(card, k)))
    return out
  }

  /**
   * A quorum card one more person allowed, still waiting: its notification is replaced by one
   * with the tally (the same tag, so a web device shows it in place of the first). One not sent
   * yet goes with the tally instead; a webhook or ntfy message already sent is left as it was.
   */
  private retally(decision: NostrEvent, request: NostrEvent): void {
    const notice = classify(request, withDecision(this.opts.ctx, decision))
    if (notice === undefined) return
    const count = waitingTally(decision, request, this.opts.ctx)!
    const eventId = tallyId(request.id, count.allowedBy.length)
    const payload = JSON.stringify(boundPayload(notice.payload))
    const nowMs = Date.now()
    let added = false
    const targets = new Set<string>()
    for (const d of this.cardDeliveries(request.id)) {
      if (d.eventId === eventId) continue
      if (d.state === 'pending') {
        this.opts.store.setState(d.eventId, d.target, 'withdrawn', nowMs)
        targets.add(d.target)
      } else if (d.state === 'sent' || d.state === 'coalesced') {
        const t = this.opts.store.target(d.target)
        if (t?.type === 'webpush' && !t.gone) targets.add(d.target)
      }
    }
    for (const target of targets)
      added =
        this.opts.store.add(eventId, target, 'cards', payload, nowMs, notice.until * 1000) || added
    if (added) this.gatherBurst(nowMs)
  }

  private schedule(atMs: number): void {
    if (this.stopped || atMs >= this.timerAt) return
    clearTimeout(this.timer)
    this.timerAt = atMs
    this.timer = setTimeout(
      () => {
        this.timerAt = Infinity
        void this.pass()
      },
      Math.max(0, atMs - Date.now()),
    )
    this.timer.unref()
  }

  /** Runs a pass now, or right after the one running. */
  pass(): Promise<void> {
    if (this.stopped) return Promise.resolve()
    if (this.running !== undefined) {
      this.again = true
      return this.running
    }
    this.running = this.sendDue()
      .catch((err: unknown) => this.opts.log(`notify: a pass failed: ${(err as Error).message}`))
      .finally(() => {
        this.running = undefined
        if (this.stopped) return
        if (this.again) {
          this.again = false
          void this.pass()
          return
        }
        const next = this.opts.store.nextDue()
        if (next !== undefined) this.schedule(next)
      })
    return this.running
  }

  private async sendDue(): Promise<void> {
    const nowMs = Date.now()
    const byTarget = new Map<string, NotifyDelivery[]>()
    for (const d of this.opts.store.due(nowMs)) {
      if (d.untilAt < nowMs) {
        // A card that expired (or news gone stale) while its endpoint was failing: not sent.
        this.opts.store.setState(
          d.eventId,
          d.target,
          'withdrawn',
          nowMs,
          'expired before it could be sent',
        )
        continue
      }
      const list = byTarget.get(d.target) ?? []
      list.push(d)
      byTarget.set(d.target, list)
    }
    await Promise.all(
      [...byTarget].map(([id, list]) => {
        const target = this.opts.store.target(id)
        if (target === undefined || target.gone) {
          for (const d of list)
            this.opts.store.setState(d.eventId, id, 'failed', nowMs, 'no such target')
          return Promise.resolve()
        }
        return this.sendToTarget(target, list)
      }),
    )
  }

  private async sendToTarget(target: NotifyTarget, list: NotifyDelivery[]): Promise<void> {
    const withdrawals = list.filter((d) => d.class === 'withdraw')
    const news = list.filter((d) => d.class !== 'withdraw')
    for (const d of withdrawals) await this.one(target, [d], JSON.parse(d.payload) as PushPayload)
    if (news.length > coalesceAbove) {
      const counts = new Map<string, number>()
      for (const d of news) counts.set(d.class, (counts.get(d.class) ?? 0) + 1)
      const summary: PushPayload = {
        type: 'notify',
        class: 'summary',
        tag: 'kith-summary',
        title: `${news.length} notifications`,
        body: [...counts].map(([c, n]) => `${n} ${c}`).join(', '),
        open: '#/',
      }
      await this.one(target, news, summary, 'coalesced')
      return
    }
    for (const d of news) await this.one(target, [d], JSON.parse(d.payload) as PushPayload)
  }

  private async one(
    target: NotifyTarget,
    rows: NotifyDelivery[],
    payload: PushPayload,
    done: 'sent' | 'coalesced' = 'sent',
  ): Promise<void> {
    if (this.stopped) return
    let result: SendResult
    try {
      result = await this.send(target, payload, this.opts, rows[0]!.eventId)
    } catch (err) {
      result = { ok: false, retry: true, error: (err as Error).message }
    }
    const nowMs = Date.now()
    if (result.ok) {
      for (const d of rows)
        this.opts.store.setState(d.eventId, target.id, rows.length > 1 ? done : 'sent', nowMs)
      this.opts.store.markTarget(target.id, true, undefined, nowMs)
      return
    }
    this.opts.store.markTarget(target.id, false, result.error, nowMs, result.gone === true)
    for (const d of rows) {
      if (result.retry && d.attempts + 1 < maxAttempts)
        this.opts.store.retryLater(d.eventId, target.id, nowMs + backoff(d.attempts), result.error)
      else this.opts.store.setState(d.eventId, target.id, 'failed', nowMs, result.error)
    }
    this.opts.log(
      `notify: ${target.id} (${target.type}) failed${result.retry ? ', will retry' : ''}: ${result.error}`,
    )
  }

  /**
   * Sends nothing more; resolves once a pass under way has recorded what it sent (bounded by the
   * senders' request timeout), so node.db may close after it and nothing sent is sent again.
   */
  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    clearTimeout(this.gather)
    await this.running
  }
}
