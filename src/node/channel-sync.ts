import { verifyEventSignature, type NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { withConnectTicket } from '../events/connect-ticket.js'
import type { ChannelBook } from '../grants/channels.js'
import { definitionsFirst as firstOf } from '../grants/definitions-first.js'
import { HubCall } from '../link/hub-call.js'
import { NodeStore } from '../store/node-store.js'
import type { FleetNode } from './fleet.js'
import type { Prerequisites } from './outbox-pump.js'

/** One hub's side of a channel command: reached or not, and its answer to what was published. */
export interface ChannelHubReport {
  url: string
  ok: boolean
  /** The hub's OK message for the published definition, or why it was not reached. */
  message: string
}

/**
 * What `hub` must hold before `event` goes to it (kith-channels, Nodes): for each private channel
 * the event is in, the definition in effect, unless that hub acknowledged it (OK true, or returned
 * it). A hub without it would take the channel for open and pass the event to the whole fleet.
 */
export function definitionsFirst(
  book: ChannelBook,
  store: NodeStore,
  event: NostrEvent,
  hub: string,
  now: number,
): Prerequisites {
  return firstOf(
    book,
    event,
    (id) => store.hubHolds(id, hub),
    (id) => store.reads.event(id),
    now,
  )
}

/**
 * Short calls (as the device) to each hub for channel commands: learns the hub's grants and
 * the channel definitions this device may see, checks each definition as a hub does (one that
 * fails is ignored, never stored), keeps the rest in node.db, and can then publish one
 * definition to every hub reached. Hubs that cannot be reached are reported, never fatal.
 */
export class ChannelSync {
  readonly book: ChannelBook
  private readonly calls: { url: string; call: HubCall }[] = []
  readonly unreached: ChannelHubReport[] = []
  /** Definitions a hub returned that fail the rules here: not stored. */
  readonly ignored: { url: string; channel: string; message: string }[] = []

  private constructor(
    private readonly node: FleetNode,
    private readonly store: NodeStore,
  ) {
    // The node's own state, already rebuilt from node.db by its GrantBook.
    this.book = node.book.state.channels
  }

  static async open(
    node: FleetNode,
    hubs: readonly string[],
    now: number,
    filter: Record<string, unknown> = {},
  ): Promise<ChannelSync> {
    const sync = new ChannelSync(node, new NodeStore(node.id.home))
    try {
      for (const url of hubs) await sync.connect(url, now, filter)
    } catch (err) {
      sync.close()
      throw err
    }
    return sync
  }

  private async connect(url: string, now: number, filter: Record<string, unknown>): Promise<void> {
    let call: HubCall | undefined
    try {
      call = await HubCall.open(withConnectTicket(url, this.node.id.deviceSecret))
      for (const e of this.node.book.chainEvents(this.node.id.devicePubkey, now)) {
        await call.publish(e)
      }
      const auth = await call.auth(this.node.id.deviceSecret)
      if (!auth.ok) throw new Error(`hub refused this device: ${auth.message}`)
      const grantEvents = await call.query({ kinds: [Kind.Grant, Kind.Revocation], limit: 5000 })
      this.node.book.learn(grantEvents)
      for (const e of grantEvents) {
        // Only revocations the verifier kept (its signature checked) date anything.
        if (e.kind === Kind.Revocation && this.node.book.event(e.id) !== undefined) {
          this.book.noteEvent(e)
        }
      }
      // Signed by their authors, not by the hub: a forged one is dropped here.
      const defs = (await call.query({ kinds: [Kind.ChannelDefinition], limit: 5000, ...filter }))
        .filter((e) => e.kind === Kind.ChannelDefinition && verifyEventSignature(e))
        .sort((a, b) => a.created_at - b.created_at)
      this.store.markHeld(
        defs.map((e) => e.id),
        url,
      )
      const keep: NostrEvent[] = []
      for (const e of defs) {
        const r = this.book.add(e, { now })
        if (r.status === 'rejected') {
          const channel = e.tags.find((t) => t[0] === 'd')?.[1] ?? '?'
          this.ignored.push({ url, channel, message: `${r.code}: ${r.reason}` })
        } else {
          keep.push(e)
        }
      }
      if (keep.length > 0) this.store.events.insertBatch(keep)
      this.calls.push({ url, call })
    } catch (err) {
      call?.close()
      this.unreached.push({
        url,
        ok: false,
        message: `not reached (${err instanceof Error ? err.message : String(err)})`,
      })
    }
  }

  /**
   * Stores `event` in node.db with an outbox entry (the running node, or the next kith up, keeps
   * sending it to hubs that have not answered), then publishes it to every hub reached.
   */
  async publish(event: NostrEvent, now: number): Promise<ChannelHubReport[]> {
    this.store.enqueue(event, now)
    const reports: ChannelHubReport[] = []
    for (const { url, call } of this.calls) {
      try {
        const answer = await call.publish(event)
        this.store.recordDelivery(event.id, url, answer.ok, answer.message, now)
        reports.push({ url, ok: answer.ok, message: answer.message })
      } catch (err) {
        reports.push({ url, ok: false, message: err instanceof Error ? err.message : String(err) })
      }
    }
    return [...reports, ...this.unreached]
  }

  close(): void {
    for (const { call } of this.calls) call.close()
    this.store.close()
  }
}
