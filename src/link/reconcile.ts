import { nip77 } from 'nostr-tools'
import { KithError } from '../errors.js'
import type { NostrEvent } from '../events/event.js'
import { sealKeys, type SetKey } from '../events/nip77-set.js'
import type { RelayClient } from './relay-client.js'

/** A stored event as reconciliation sees it: the key a NIP-77 set is sealed from. */
export type EventKey = SetKey

/** Ids asked for per REQ when fetching what reconciliation found missing (hubs take 1,000). */
export const fetchIdsPerRequest = 500

/**
 * NIP-77 set reconciliation with `client` over `filter`: which ids the relay holds that `mine`
 * lacks (`need`), and which `mine` holds that the relay lacks (`have`). Unlike paging by
 * `created_at`, it finds an event however late it reached the relay. A large set is reconciled
 * in parts cut by time, two at once; a part the relay refuses as too large (`NEG-ERR
 * "blocked: …"`, as NIP-77 has relays say) is cut in two and tried again, so a store of any size
 * catches up however low the relay's cap (a kith hub's is 500,000). Rejects with the relay's
 * NEG-ERR reason (KithError 'restricted', reason 'refused', or 'too-large' when even a part cut
 * 20 times is refused as too large, or after `maxRefusals` such answers) or on timeout.
 */
export async function reconcile(
  client: RelayClient,
  filter: Record<string, unknown>,
  mine: Iterable<EventKey>,
  timeoutMs: number,
  opts: {
    /** Sets at least this large are reconciled in parts, two at once. */ splitAtKeys?: number
    /** No part holds more of this side's keys than this. */ maxKeysPerPart?: number
  } = {},
): Promise<{ need: string[]; have: string[]; rounds: number }> {
  const keys = [...mine]
  const splitAt = opts.splitAtKeys ?? defaultSplitAtKeys
  const perPart = Math.max(1, opts.maxKeysPerPart ?? defaultMaxKeysPerPart)
  const parts =
    keys.length >= splitAt
      ? (splitByTime(filter, keys, Math.max(2, Math.ceil(keys.length / perPart))) ?? [
          { filter, keys },
        ])
      : [{ filter, keys }]
  const need: string[] = []
  const have: string[] = []
  let rounds = 0
  // Two parts at once: while the relay answers one, this side works on the other, so on two
  // cores a large reconciliation takes little more than half as long. Kith hubs allow two
  // reconciliations per connection (kith.negentropy_max_sessions).
  const queue = [...parts]
  const refusals = { left: maxRefusals }
  const worker = async () => {
    for (let part = queue.shift(); part !== undefined; part = queue.shift()) {
      const r = await reconcilePart(client, part.filter, part.keys, timeoutMs, 0, refusals)
      need.push(...r.need)
      have.push(...r.have)
      rounds = Math.max(rounds, r.rounds)
    }
  }
  await Promise.all([worker(), worker()])
  return { need, have, rounds }
}

/** Below this a set reconciles in well under a second anyway: one reconciliation is enough. */
export const defaultSplitAtKeys = 20_000
/** Parts of at most this many keys: well under a kith hub's cap, and each sealed quickly. */
export const defaultMaxKeysPerPart = 200_000
/** Cuts in two of a refused part, at most: 2^20 parts is past any relay's store. */
const maxCuts = 20
/**
 * "Too large" answers one reconciliation takes before it gives up (and a node pages instead): a
 * relay that says it to everything would otherwise have this side open a reconciliation for every
 * part of a 20-deep tree of cuts. An honest relay's cap is met within a few cuts per part.
 */
export const maxRefusals = 64

/** One part; cut in two and retried when the relay says it is too large. */
async function reconcilePart(
  client: RelayClient,
  filter: Record<string, unknown>,
  keys: EventKey[],
  timeoutMs: number,
  cuts: number,
  refusals: { left: number },
): Promise<{ need: string[]; have: string[]; rounds: number }> {
  try {
    return await reconcileOnce(client, filter, keys, timeoutMs)
  } catch (err) {
    const tooLarge = err instanceof KithError && err.reason === 'too-large'
    const halves =
      tooLarge && cuts < maxCuts && --refusals.left >= 0 ? cutInTwo(filter, keys) : undefined
    if (halves === undefined) throw err
    const [a, b] = halves as [Part, Part]
    const ra = await reconcilePart(client, a.filter, a.keys, timeoutMs, cuts + 1, refusals)
    const rb = await reconcilePart(client, b.filter, b.keys, timeoutMs, cuts + 1, refusals)
    return {
      need: [...ra.need, ...rb.need],
      have: [...ra.have, ...rb.have],
      rounds: ra.rounds + rb.rounds,
    }
  }
}

type Part = { filter: Record<string, unknown>; keys: EventKey[] }

/**
 * The filter and keys cut into `n` parts at quantiles of this side's `created_at`s (fewer when
 * times repeat), or undefined when they cannot be cut.
 */
function splitByTime(
  filter: Record<string, unknown>,
  keys: readonly EventKey[],
  n: number,
): Part[] | undefined {
  const times = keys.map((k) => k.created_at).sort((x, y) => x - y)
  const since = typeof filter.since === 'number' ? filter.since : 0
  const until = typeof filter.until === 'number' ? filter.until : Infinity
  const cuts: number[] = []
  for (let i = 1; i < n; i++) {
    const t = times[Math.floor((i * times.length) / n)]!
    if (t > since && t <= until && t !== cuts.at(-1)) cuts.push(t)
  }
  return cuts.length === 0 ? undefined : partsAt(filter, keys, cuts)
}

/**
 * A refused part cut in two: at this side's median time, or, when this side holds too few keys
 * there to cut by (the relay has what this side lacks), at the middle of its time range.
 */
function cutInTwo(filter: Record<string, unknown>, keys: readonly EventKey[]): Part[] | undefined {
  const byKeys = splitByTime(filter, keys, 2)
  if (byKeys !== undefined) return byKeys
  const since = typeof filter.since === 'number' ? filter.since : 0
  const until =
    typeof filter.until === 'number' ? filter.until : Math.floor(Date.now() / 1000) + 900
  if (until - since < 1) return undefined
  return partsAt(filter, keys, [since + Math.ceil((until - since) / 2)])
}

/** Parts [since, cut₁ − 1], [cut₁, cut₂ − 1], …, [cutₙ, until] of the filter and the keys. */
function partsAt(
  filter: Record<string, unknown>,
  keys: readonly EventKey[],
  cuts: number[],
): Part[] {
  const bounds = [undefined, ...cuts, undefined]
  const parts: Part[] = []
  for (let i = 0; i + 1 < bounds.length; i++) {
    const lo = bounds[i]
    const hi = bounds[i + 1]
    parts.push({
      filter: {
        ...filter,
        ...(lo === undefined ? {} : { since: lo }),
        ...(hi === undefined ? {} : { until: hi - 1 }),
      },
      keys: keys.filter(
        (k) => (lo === undefined || k.created_at >= lo) && (hi === undefined || k.created_at < hi),
      ),
    })
  }
  return parts
}

function reconcileOnce(
  client: RelayClient,
  filter: Record<string, unknown>,
  mine: readonly EventKey[],
  timeoutMs: number,
): Promise<{ need: string[]; have: string[]; rounds: number }> {
  const neg = new nip77.Negentropy(sealKeys(mine))
  const need: string[] = []
  const have: string[] = []
  let rounds = 0
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      rec.close()
      reject(
        new KithError('io', `${client.url} did not finish a reconciliation in ${timeoutMs} ms`, {
          reason: 'timeout',
        }),
      )
    }, timeoutMs)
    const rec = client.openNeg(filter, neg.initiate(), {
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
          rec.close()
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
          rec.close()
          resolve({ need, have, rounds })
        } else rec.send(next)
      },
      onError: (reason) => {
        clearTimeout(timer)
        reject(
          new KithError('restricted', `${client.url}: ${reason}`, {
            // NIP-77: "blocked:" is a relay refusing the query as too large; cut it smaller.
            reason: reason.startsWith('blocked:') ? 'too-large' : 'refused',
          }),
        )
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
