import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { onTestFinished } from 'vitest'
import { WebSocketServer } from 'ws'
import { NostrRelay } from '@nostr-relay/core'
import { EventRepository, type Event, type Filter, type IncomingMessage } from '@nostr-relay/common'
import { parseFilter } from '../../src/events/filter.js'
import { EventStore } from '../../src/store/event-store.js'
import { defaultHubLimits } from '../../src/hub/limits.js'
import { TurnQueue } from '../../src/hub/turn-queue.js'
import { NegReconciliations } from '../../src/hub/negentropy.js'
import { WorkBudget } from '../../src/hub/req-scheduler.js'
import { tempDir } from './tmp.js'

/** Storage for the third-party relay engine: a plain sqlite event store. */
class SqliteRepository extends EventRepository {
  constructor(private readonly store: EventStore) {
    super()
  }
  isSearchSupported(): boolean {
    return false
  }
  upsert(event: Event) {
    const [outcome] = this.store.insertBatch([event])
    return { isDuplicate: outcome !== 'stored' }
  }
  find(filter: Filter): Event[] {
    return this.store
      .query(
        [parseFilter(filter, { maxValues: 5000, maxTagConditions: 26, maxTagValueLength: 4096 })],
        {
          defaultLimit: 500,
          maxLimit: 5000,
        },
      )
      .map((r) => JSON.parse(r.raw) as Event)
  }
  destroy(): Promise<void> {
    this.store.close()
    return Promise.resolve()
  }
}

/**
 * A standard NIP-01 relay that knows nothing of Kith (no NIP-42, no grants): the @nostr-relay/core
 * engine on a ws server, 127.0.0.1 port 0. Stopped after the test.
 */
export async function startStandardRelay(
  opts: {
    /** Also answer NIP-77 (as strfry does), with nostr-tools' Negentropy over the same store. */
    nip77?: boolean
  } = {},
): Promise<{ url: string; store: EventStore; stop: () => Promise<void> }> {
  const store = new EventStore(join(tempDir(), 'relay.db'))
  const relay = new NostrRelay(new SqliteRepository(store))
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  const wide = { maxValues: 5000, maxTagConditions: 26, maxTagValueLength: 4096 }
  wss.on('connection', (ws) => {
    relay.handleConnection(ws)
    const neg = opts.nip77
      ? new NegReconciliations(
          store,
          defaultHubLimits,
          {
            send: (frame) => ws.send(JSON.stringify(frame)),
            hidden: () => [],
            payer: () => 'relay',
          },
          {
            work: new WorkBudget(0, 0),
            open: new Map(),
            maxOpenPerPerson: Infinity,
            turns: new TurnQueue(),
          },
        )
      : undefined
    ws.on('close', () => neg?.closeAll())
    ws.on('message', (data: Buffer) => {
      let message: IncomingMessage
      try {
        message = JSON.parse(data.toString('utf8')) as IncomingMessage
      } catch {
        return
      }
      const frame = message as unknown[]
      if (neg !== undefined && typeof frame[0] === 'string' && frame[0].startsWith('NEG-')) {
        const subId = String(frame[1])
        if (frame[0] === 'NEG-OPEN') neg.open(subId, parseFilter(frame[2], wide), String(frame[3]))
        else if (frame[0] === 'NEG-MSG') neg.message(subId, String(frame[2]))
        else neg.close(subId)
        return
      }
      void relay.handleMessage(ws, message)
    })
    ws.on('close', () => relay.handleDisconnect(ws))
  })
  await new Promise<void>((resolve) => wss.once('listening', resolve))
  const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    for (const c of wss.clients) c.terminate()
    await new Promise<void>((resolve) => wss.close(() => resolve()))
    await relay.destroy()
  }
  onTestFinished(stop)
  return { url, store, stop }
}
