import { nip77 } from 'nostr-tools'
import { KithError } from '../errors.js'
import type { NostrEvent } from '../events/event.js'
import type { RelayClient } from './relay-client.js'

/** A stored event as reconciliation sees it. */
export interface EventKey {
  created_at: number
  id: string
}

/** Ids asked for per REQ when fetching what reconciliation found missing (hubs take 1,000). */
export const fetchIdsPerRequest = 500

/**
 * NIP-77 set reconciliation with `client` over `filter`: which ids the relay holds that `mine`
 * lacks (`need`), and which `mine` holds that the relay lacks (`have`). Unlike paging by
 * `created_at`, it finds an event however late it reached the relay. Rejects with the relay's
 * NEG-ERR reason (KithError 'restricted', reason 'refused') or on timeout.
 */
export async function reconcile(
  client: RelayClient,
  filter: Record<string, unknown>,
  mine: Iterable<EventKey>,
  timeoutMs: number,
  opts: {
    /** Sets at least this large are reconciled in two halves at once. */ splitAtKeys?: number
  } = {},
): Promise<{ need: string[]; have: string[]; rounds: number }> {
  const keys = [...mine]
  const halves =
    keys.length >= (opts.splitAtKeys ?? defaultSplitAtKeys) ? splitByTime(filter, keys) : undefined
  if (halves === undefined) return reconcileOnce(client, filter, keys, timeoutMs)
  // Two halves of the time range at once: while the relay answers one, this side works on the
  // other, so on two cores a large reconciliation takes little more than half as long. Kith hubs
  // allow two reconciliations per connection (kith.negentropy_max_sessions).
  const [a, b] = await Promise.all(
    halves.map((h) => reconcileOnce(client, h.filter, h.keys, timeoutMs)),
  )
  return {
    need: [...a!.need, ...b!.need],
    have: [...a!.have, ...b!.have],
    rounds: Math.max(a!.rounds, b!.rounds),
  }
}

/** Below this a set reconciles in well under a second anyway: one session is enough. */
export const defaultSplitAtKeys = 20_000

/** The filter and keys cut at the median `created_at`, or undefined when it cannot be cut. */
function splitByTime(
  filter: Record<string, unknown>,
  keys: readonly EventKey[],
): { filter: Record<string, unknown>; keys: EventKey[] }[] | undefined {
  const times = keys.map((k) => k.created_at).sort((x, y) => x - y)
  const median = times[times.length >> 1]!
  const since = typeof filter.since === 'number' ? filter.since : 0
  const until = typeof filter.until === 'number' ? filter.until : Infinity
  if (median <= since || median > until) return undefined
  return [
    { filter: { ...filter, until: median - 1 }, keys: keys.filter((k) => k.created_at < median) },
    { filter: { ...filter, since: median }, keys: keys.filter((k) => k.created_at >= median) },
  ]
}

function reconcileOnce(
  client: RelayClient,
  filter: Record<string, unknown>,
  mine: readonly EventKey[],
  timeoutMs: number,
): Promise<{ need: string[]; have: string[]; rounds: number }> {
  const storage = new nip77.NegentropyStorageVector()
  for (const k of mine) storage.insert(k.created_at, k.id)
  storage.seal()
  const neg = new nip77.Negentropy(storage)
  const need: string[] = []
  const have: string[] = []
  let rounds = 0
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      session.close()
      reject(
        new KithError('io', `${client.url} did not finish a reconciliation in ${timeoutMs} ms`, {
          reason: 'timeout',
        }),
      )
    }, timeoutMs)
    const session = client.openNeg(filter, neg.initiate(), {
      onMessage: (message) => {
        rounds++
        let next: string | null
        try {
          next = neg.reconcile(
            message,
            (id) => have.push(id),
            (id) => need.push(id),
          )
        } catch (err) {
          clearTimeout(timer)
          session.close()
          reject(
            new KithError(
              'invalid',
              `${client.url} sent a bad reconciliation message: ${err instanceof Error ? err.message : String(err)}`,
            ),
          )
          return
        }
        if (next === null) {
          clearTimeout(timer)
          session.close()
          resolve({ need, have, rounds })
        } else session.send(next)
      },
      onError: (reason) => {
        clearTimeout(timer)
        reject(new KithError('restricted', `${client.url}: ${reason}`, { reason: 'refused' }))
      },
    })
  })
}

/** Fetches `ids` from `client` in slices, each delivered (and processed) before the next. */
export async function fetchIds(
  client: RelayClient,
  ids: readonly string[],
  deliver: (events: NostrEvent[]) => Promise<void>,
  timeoutMs: number,
): Promise<number> {
  let total = 0
  for (let i = 0; i < ids.length; i += fetchIdsPerRequest) {
    const slice = ids.slice(i, i + fetchIdsPerRequest)
    const events = await client.query([{ ids: slice, limit: slice.length }], { timeoutMs })
    total += events.length
    await deliver(events)
  }
  return total
}
