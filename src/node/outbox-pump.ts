import type { NostrEvent } from '../events/event.js'
import type { HubLink } from '../link/hub-link.js'
import type { NodeStore } from '../store/node-store.js'
import { outboxRetryMs } from './timings.js'

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
 * oldest first, one at a time. OK true and OK false are both recorded (a refusal is shown, never
 * dropped); a lost connection leaves the rest for the next time the link is up.
 */
export class OutboxPump {
  private readonly pumping = new Set<string>()
  private readonly waiters = new Map<string, ((d: Delivery) => void)[]>()

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
    const run = async () => {
      for (;;) {
        const pending = this.store.pendingFor(link.url)
        if (pending.length === 0 || !link.authenticated) return
        for (const event of pending) {
          const held = await this.sendPrerequisites(link, event)
          const answer = held ?? (await link.publish(event))
          this.store.recordDelivery(event.id, link.url, answer.ok, answer.message, this.opts.now())
          if (answer.ok) this.opts.delivered(event.id)
          if (!answer.ok)
            this.opts.log(`${link.url} refused ${event.id.slice(0, 12)}…: ${answer.message}`)
          for (const fn of this.waiters.get(event.id) ?? [])
            fn({ hub: link.url, ok: answer.ok, message: answer.message })
        }
      }
    }
    run()
      .catch((err: unknown) =>
        this.opts.log(`outbox to ${link.url}: ${err instanceof Error ? err.message : String(err)}`),
      )
      .finally(() => {
        this.pumping.delete(link.url)
        // An event queued while the last pass was finishing must not wait for the next trigger.
        if (
          !this.opts.stopped() &&
          link.authenticated &&
          this.store.pendingFor(link.url).length > 0
        ) {
          setTimeout(() => this.pump(link), outboxRetryMs).unref()
        }
      })
  }

  /**
   * Publishes what the hub needs before `event`; undefined when it may be sent, else the answer
   * recorded for `event` instead of sending it (a refusal, shown like a hub's).
   */
  private async sendPrerequisites(
    link: HubLink,
    event: NostrEvent,
  ): Promise<{ ok: false; message: string } | undefined> {
    const needs = this.opts.prerequisites?.(event, link.url)
    if (needs === undefined) return undefined
    if ('refuse' in needs) return { ok: false, message: `not sent: ${needs.refuse}` }
    for (const first of needs.first) {
      const answer = await link.publish(first)
      if (!answer.ok) {
        this.opts.log(`${link.url} refused ${first.id.slice(0, 12)}…: ${answer.message}`)
        return {
          ok: false,
          message: `not sent: this hub refused ${describeFirst(first)} it needs first (${answer.message})`,
        }
      }
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
