import { KithError } from '../errors.js'
import { withConnectTicket } from '../events/connect-ticket.js'
import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { normalizeRelayUrl } from '../events/nip42.js'
import type { Identity } from '../identity/keys.js'
import { HubCall } from '../link/hub-call.js'
import { withLocalNode } from './local-node.js'

/**
 * `kith audit --hub URL` and a sealed fleet's export: the events an audit reads, as a hub holds
 * them (sealed events still sealed, signed as they were sent), read as this device.
 */

/** The largest page a Kith hub serves (hub/limits.ts maxLimit). */
const page = 5000

/** A hub call authenticated as this device; the URL normalized (bad-url: exit 2). */
async function openAs(id: Identity, url: string): Promise<HubCall> {
  const bare = normalizeRelayUrl(url)
  // A connect ticket is a replayable credential: only the fleet's own configured hubs get one.
  const ours = id.config.hubs.some((h) => sameHub(h, bare))
  const call = await HubCall.open(ours ? withConnectTicket(bare, id.deviceSecret) : bare, {
    timeoutMs: 15_000,
  })
  try {
    const now = Math.floor(Date.now() / 1000)
    // The chain first, so a hub that has not seen this device yet can admit it (as syncHubs).
    const chain = withLocalNode(({ book }) => book.chainEvents(id.devicePubkey, now))
    for (const e of chain) await call.publish(e)
    const auth = await call.auth(id.deviceSecret)
    if (!auth.ok)
      throw new KithError('restricted', `hub ${bare} refused this device: ${auth.message}`)
    return call
  } catch (err) {
    call.close()
    throw err
  }
}

function sameHub(a: string, b: string): boolean {
  try {
    return normalizeRelayUrl(a) === b
  } catch (err) {
    if (!(err instanceof KithError)) throw err
    return false
  }
}

/** Every event of `filter` the hub serves this device, newest first, in pages. */
async function all(call: HubCall, filter: Record<string, unknown>): Promise<NostrEvent[]> {
  const out = new Map<string, NostrEvent>()
  let until: number | undefined
  for (;;) {
    const got = await call.query({
      ...filter,
      limit: page,
      ...(until === undefined ? {} : { until }),
    })
    let fresh = 0
    for (const e of got)
      if (!out.has(e.id)) {
        out.set(e.id, e)
        fresh++
      }
    if (got.length < page || fresh === 0) break
    // Inclusive: events of the last second may run past the page; ids already held are skipped.
    until = Math.min(...got.map((e) => e.created_at))
  }
  return [...out.values()]
}

/**
 * The events an audit reads from the hub at `url`: grants, revocations, policies (a hub keeps
 * only each policy's newest version), and prompts, cards and decisions since `since`.
 */
export async function hubAuditEvents(
  id: Identity,
  url: string,
  since: number | undefined,
): Promise<NostrEvent[]> {
  const call = await openAs(id, url)
  try {
    const out: NostrEvent[] = []
    for (const kinds of [[Kind.Grant, Kind.Revocation], [Kind.AgentPolicy]])
      out.push(...(await all(call, { kinds })))
    out.push(
      ...(await all(call, {
        kinds: [Kind.ChatMessage, Kind.PermissionRequest, Kind.PermissionDecision],
        ...(since === undefined ? {} : { since }),
      })),
    )
    return out
  } finally {
    call.close()
  }
}

/** The events of `ids` as the hub at `url` holds them (sealed ones sealed), in slices. */
export async function hubEventsById(
  id: Identity,
  url: string,
  ids: readonly string[],
): Promise<NostrEvent[]> {
  const call = await openAs(id, url)
  try {
    const out: NostrEvent[] = []
    // kith-hub limits a filter to 1,000 values.
    for (let i = 0; i < ids.length; i += 500)
      out.push(...(await call.query({ ids: ids.slice(i, i + 500), limit: 500 })))
    return out
  } finally {
    call.close()
  }
}
