import { parentPort, workerData } from 'node:worker_threads'
import type { NostrEvent } from '../events/event.js'
import { EventStore } from './event-store.js'
import { hubMigrations, usageUncountedKinds } from './hub-schema.js'

/**
 * The hub's writer thread (batch-writer.ts): its own connection to hub.db, on which it commits
 * the batches the main thread sends, so sqlite's inserts, index updates and checkpoints run
 * beside the main thread instead of on it.
 */
export interface WriterData {
  path: string
  synchronous: 'full' | 'normal'
}

export type WriterRequest = { id: number; raws: string[] } | { close: true }

export type WriterReply =
  | { ready: true }
  | { id: number; outcomes: string[]; usage: [string, number, number][] }
  | { id: number; error: string; code?: string | undefined }
  | { failed: string; code?: string | undefined }

/**
 * The writer's page cache, KiB: it reads index pages only to insert into them, and its commits
 * took as long with 8 MB or 64 MB at 1M events; 2 MB took 6 MB off the hub's peak under
 * bench:hub with ingest unchanged (docs/performance.md, issue 34). Queries keep the main
 * connection's cache.
 */
const writerPageCacheKiB = 2000

if (parentPort === null) throw new Error('batch-writer-worker must run as a worker thread')
const port = parentPort
const data = workerData as WriterData
let store: EventStore | undefined
try {
  // The main thread opened the file first and brought its schema up to date; this is a second
  // connection to it, with the same settings (syncApart: the main thread fsyncs the WAL).
  store = new EventStore(data.path, {
    synchronous: data.synchronous,
    syncApart: true,
    migrations: hubMigrations,
    usage: { exempt: usageUncountedKinds },
    pageCacheKiB: writerPageCacheKiB,
  })
  port.postMessage({ ready: true } satisfies WriterReply)
} catch (err) {
  port.postMessage({
    failed: String((err as Error).message),
    code: codeOf(err),
  } satisfies WriterReply)
  port.close()
}

port.on('message', (msg: WriterRequest) => {
  if ('close' in msg) {
    // Closed here, before the main thread's connection, whose close is then the last one (it
    // checkpoints and removes the -wal, which is how the next start knows the stop was clean).
    store?.close()
    store = undefined
    port.close()
    return
  }
  if (store === undefined) return
  try {
    const events = msg.raws.map((raw) => JSON.parse(raw) as NostrEvent)
    const written = store.writeBatch(events, msg.raws)
    port.postMessage({ id: msg.id, ...written } satisfies WriterReply)
  } catch (err) {
    // The transaction rolled back: nothing of this batch is stored.
    port.postMessage({
      id: msg.id,
      error: String((err as Error).message),
      code: codeOf(err),
    } satisfies WriterReply)
  }
})

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}
