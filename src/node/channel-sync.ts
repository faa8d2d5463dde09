import { verifyEventSignature, type NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { ChannelBook } from '../grants/channels.js'
import { HubSession } from '../link/hub-session.js'
import { NodeStore } from '../store/node-store.js'
import type { FleetNode } from './fleet.js'

/** One hub's side of a channel command: reached or not, and its answer to what was published. */
export interface ChannelHubReport {
  url: string
  ok: boolean
  /** The hub's OK message for the published definition, or why it was not reached. */
  message: string
}

/**
 * Short sessions (as the device) to each hub for channel commands: learns the hub's grants and
 * the channel definitions this device may see, stores them in node.db, and can then publish one
 * definition to every hub reached. Hubs that cannot be reached are reported, never fatal.
 */
export class ChannelSync {
  readonly book: ChannelBook
  private readonly sessions: { url: string; session: HubSession }[] = []
  readonly unreached: ChannelHubReport[] = []

  private constructor(
    private readonly node: FleetNode,
    private readonly store: NodeStore,
  ) {
    this.book = new ChannelBook(node.book.verifier)
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
      // Definitions known here (earlier syncs, the running node) and those just learned, oldest
      // first: the newest of each channel is in effect.
      for (const e of sync.store.events.eventsOfKind(Kind.ChannelDefinition)) sync.book.add(e)
    } catch (err) {
      sync.close()
      throw err
    }
    return sync
  }

  private async connect(url: string, now: number, filter: Record<string, unknown>): Promise<void> {
    let session: HubSession | undefined
    try {
      session = await HubSession.open(url)
      for (const e of this.node.book.chainEvents(this.node.id.devicePubkey, now)) {
        await session.publish(e)
      }
      const auth = await session.auth(this.node.id.deviceSecret)
      if (!auth.ok) throw new Error(`hub refused this device: ${auth.message}`)
      this.node.book.learn(
        await session.query({ kinds: [Kind.Grant, Kind.Revocation], limit: 5000 }),
      )
      // Signed by their authors, not by the hub: a forged one is dropped here.
      const defs = (
        await session.query({ kinds: [Kind.ChannelDefinition], limit: 5000, ...filter })
      ).filter((e) => e.kind === Kind.ChannelDefinition && verifyEventSignature(e))
      if (defs.length > 0) this.store.events.insertBatch(defs)
      this.sessions.push({ url, session })
    } catch (err) {
      session?.close()
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
    for (const { url, session } of this.sessions) {
      try {
        const answer = await session.publish(event)
        this.store.recordDelivery(event.id, url, answer.ok, answer.message, now)
        reports.push({ url, ok: answer.ok, message: answer.message })
      } catch (err) {
        reports.push({ url, ok: false, message: err instanceof Error ? err.message : String(err) })
      }
    }
    return [...reports, ...this.unreached]
  }

  close(): void {
    for (const { session } of this.sessions) session.close()
    this.store.close()
  }
}
