import type { NostrEvent } from '../events/event.js'
import type { HubLink } from '../link/hub-link.js'
import type { NodeStore } from '../store/node-store.js'
import { outboxRetryMs } from './timings.js'
import {
  outboxContinues,
  outboxFailure,
  outboxOutcome,
  outboxRetryDelayMs,
  type OutboxDecision,
} from '../link/outbox-answer.js'

export interface Delivery {
  hub: string
  ok: boolean
  message: string
}

/**
 * What a hub must hold before an event goes to it: `first`, events to publish before it (and
 * that it must accept), or `refuse`, why the event must not go to this hub at all.
 */
export type Prerequisites = { first: NostrEvent[] } | { refuse: string }

/**
 * Sends the node's outbox to its hubs: for each link, every event that hub has not answered,
 * oldest first, one at a time. What an answer means is link/outbox-answer.ts's (as for the
 * browser's outbox): delivered and refused are recorded per hub (a refusal is shown, never
 * dropped); a "not now" or a lost connection leaves the rest pending, tried again with backoff
 * or the next time the link is up.
 *
 * This outbox keeps an event until every hub answered it (node.db records each hub's answer), as
 * the browser's does (web/app/lib/outbox-record.ts): a hub that was down when the event was made
 * gets it when it is back.
 */
export class OutboxPump {
  private readonly pumping = new Set<string>()
  private readonly waiters = new Map<string, ((d: Delivery) => void)[]>()
  /** Per hub: `retry` answers in a row, for the backoff (reset by a delivered or refused one). */
  private readonly retries = new Map<string, number>()

  constructor(
    private readonly store: NodeStore,
    private readonly opts: {
      now: () => number
      log: (line: string) => void
      stopped: () => boolean
      /** Told of each hub's OK true (the reply-timing metrics). */
      delivered: (id: string) => void
      /**
       * Asked before each event goes to a hub (kith-channels, Nodes: the definition in effect of
       * a private channel goes first to a hub that has not acknowledged it). Absent: none.
       */
      prerequisites?: (event: NostrEvent, hub: string) => Prerequisites
    },
  ) {}

  pump(link: HubLink): void {
    if (this.pumping.has(link.url) || !link.authenticated) return
    this.pumping.add(link.url)
    // The pass ends when nothing is pending, the link is down, or an answer stopped it.
    const run = async (): Promise<OutboxDecision | undefined> => {
      for (;;) {
        const pending = this.store.pendingFor(link.url)
        if (pending.length === 0 || !link.authenticated) return undefined
        for (const event of pending) {
          const decision = await this.sendOne(link, event)
          if (!outboxContinues(decision)) return decision
        }
      }
    }
    let stop: OutboxDecision | undefined
    run()
      .then(
        (s) => {
          stop = s
        },
        (err: unknown) =>
          this.opts.log(
            `outbox to ${link.url}: ${err instanceof Error ? err.message : String(err)}`,
          ),
      )
      .finally(() => {
        // In one step: an event queued after the last look at the outbox, while this pass was
        // ending, is seen by `after` (its own pump() returned early: this pass still ran).
        this.pumping.delete(link.url)
        this.after(link, stop)
      })
  }

  /**
   * Sends `event` (after what the hub needs first) and acts on the answer (link/outbox-answer.ts):
   * delivered and refused are recorded for this hub and told to `send`'s caller; retry and
   * revoked leave the event pending for this hub.
   */
  private async sendOne(link: HubLink, event: NostrEvent): Promise<OutboxDecision> {
    const decision =
      (await this.sendPrerequisites(link, event)) ??
      (await link.publish(event).then(outboxOutcome, outboxFailure))
    const short = `${event.id.slice(0, 12)}…`
    switch (decision.outcome) {
      case 'delivered':
      case 'refused': {
        const ok = decision.outcome === 'delivered'
        this.retries.delete(link.url)
        this.store.recordDelivery(event.id, link.url, ok, decision.message, this.opts.now())
        if (ok) this.opts.delivered(event.id)
        else this.opts.log(`${link.url} refused ${short}: ${decision.message}`)
        for (const fn of this.waiters.get(event.id) ?? [])
          fn({ hub: link.url, ok, message: decision.message })
        break
      }
      case 'retry':
        this.opts.log(`${link.url} did not take ${short} (will retry): ${decision.message}`)
        break
      case 'revoked':
        this.opts.log(`${link.url} says this device is revoked; ${short} stays queued`)
        break
    }
    return decision
  }

  /** After a pass: the next one, if any, and when. */
  private after(link: HubLink, stop: OutboxDecision | undefined): void {
    if (this.opts.stopped() || !link.authenticated) return
    // Revoked: nothing goes to this hub on this link; a new link (reconnect) pumps again.
    if (stop?.outcome === 'revoked') return
    if (stop?.outcome === 'retry') {
      const attempt = this.retries.get(link.url) ?? 0
      this.retries.set(link.url, attempt + 1)
      setTimeout(() => this.pump(link), outboxRetryDelayMs(attempt)).unref()
      return
    }
    // An event queued while the last pass was finishing must not wait for the next trigger.
    if (this.store.pendingFor(link.url).length > 0)
      setTimeout(() => this.pump(link), outboxRetryMs).unref()
  }

  /**
   * Publishes what the hub needs before `event`; undefined when it may be sent, else the decision
   * for `event` instead of sending it: refused (shown like a hub's refusal) when the hub refused
   * what it needs first or it must not go to this hub at all, or that answer's retry or revoked.
   */
  private async sendPrerequisites(
    link: HubLink,
    event: NostrEvent,
  ): Promise<OutboxDecision | undefined> {
    const needs = this.opts.prerequisites?.(event, link.url)
    if (needs === undefined) return undefined
    if ('refuse' in needs) return { outcome: 'refused', message: `not sent: ${needs.refuse}` }
    for (const first of needs.first) {
      const answer = await link.publish(first).then(outboxOutcome, outboxFailure)
      if (answer.outcome === 'refused') {
        this.opts.log(`${link.url} refused ${first.id.slice(0, 12)}…: ${answer.message}`)
        return {
          outcome: 'refused',
          message: `not sent: this hub refused ${describeFirst(first)} it needs first (${answer.message})`,
        }
      }
      if (answer.outcome !== 'delivered') return answer
      this.store.markHeld([first.id], link.url)
    }
    return undefined
  }

  /**
   * Queues `event`, sends it on every link, and resolves with the first hub's answer, or
   * undefined when no hub is connected (it stays queued) or none answers within `timeoutMs`.
   */
  async send(
    event: NostrEvent,
    links: readonly HubLink[],
    timeoutMs: number,
  ): Promise<Delivery | undefined> {
    const first = new Promise<Delivery>((resolve) => this.waiters.set(event.id, [resolve]))
    this.store.enqueue(event, this.opts.now())
    for (const link of links) this.pump(link)
    try {
      if (!links.some((l) => l.authenticated)) return undefined
      const timer = new Promise<undefined>((r) => setTimeout(() => r(undefined), timeoutMs).unref())
      return await Promise.race([first, timer])
    } finally {
      this.waiters.delete(event.id)
    }
  }
}

function describeFirst(event: NostrEvent): string {
  const d = event.tags.find((t) => t[0] === 'd')?.[1]
  return d === undefined ? `event ${event.id.slice(0, 12)}…` : `the definition of #${d}`
}
