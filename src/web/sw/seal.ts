/// <reference lib="webworker" />
import {
  authorityFilter,
  definitionsFirst,
  FleetState,
  Kind,
  pageBackwards,
  sealingAuthorityKinds,
  verifyEventSignature,
  type NostrEvent,
  type RelayClient,
} from '../../browser-core.js'
import type { Device } from '../app/lib/device.js'
import { WebKeys } from '../app/lib/e2e.js'
import { idbAll, idbGet } from '../app/lib/idb.js'

/**
 * The keys a service worker seals with (kith-e2e/1), built as the app builds its own: `stored`,
 * the events the app verified and kept in IndexedDB (admitted without verifying again), then
 * `fresh`, what a hub holds now (verified here), authority before envelopes so each envelope's
 * signer is judged with the grants of its time. The app may not have run since the last
 * rotation: the hub's envelopes are what make the seal current, so a removed member's key is not
 * used for a decision made on a notification.
 */
export function keysFrom(
  device: Device,
  stored: readonly NostrEvent[],
  fresh: readonly NostrEvent[],
  now: number,
): WebKeys {
  const r = device.record
  const state = new FleetState({ founder: r.fleet, verifySignature: verifyEventSignature })
  const keys = new WebKeys(r.pubkey, device.secret, r.fleet, state)
  const take = (events: readonly NostrEvent[]) => {
    for (const { event, admission } of state.admitBatch(events, now, { keepPending: true }))
      if (admission.ok || event.kind === Kind.FleetSetting) keys.take(event)
  }
  take([
    ...r.chain,
    r.grant,
    ...(r.revocations ?? []),
    ...(r.sealing ?? []),
    ...stored.filter((e) => sealingAuthorityKinds.includes(e.kind) || e.kind === Kind.KeyEnvelope),
  ])
  const verified = fresh.filter(verifyEventSignature)
  take(verified.filter((e) => e.kind !== Kind.KeyEnvelope))
  take(verified.filter((e) => e.kind === Kind.KeyEnvelope))
  return keys
}

/**
 * keysFrom with the app's IndexedDB and, from `client`, the fleet's authority and `channel`'s
 * envelopes; with `first`, what that hub must be sent before an event (the private channel's
 * definition in effect when the hub did not return it: kith-channels, "Definitions first").
 */
export async function keysForChannel(
  device: Device,
  client: RelayClient,
  channel: string,
): Promise<{ keys: WebKeys; first: (event: NostrEvent) => NostrEvent[] }> {
  const now = Math.floor(Date.now() / 1000)
  const fresh: NostrEvent[] = []
  const deliver = (events: NostrEvent[]) => {
    fresh.push(...events)
    return Promise.resolve()
  }
  const log = (line: string) => console.warn(`kith: ${line}`)
  // What the app already fetched from this hub is in IndexedDB: ask only for what is newer than
  // its authority cursor there (kith-chat/1, step 5); all of it when the app never linked.
  const cursors = (await idbGet<Record<string, number>>('prefs', 'authorityCursors')) ?? {}
  const authority = authorityFilter([...sealingAuthorityKinds], cursors[client.url], now)
  await pageBackwards(client, authority, now, { deliver, log })
  await pageBackwards(client, { kinds: [Kind.KeyEnvelope], '#h': [channel] }, now, {
    deliver,
    log,
  })
  const stored = await idbAll<NostrEvent>('events')
  const keys = keysFrom(device, stored, fresh, now)
  const atHub = new Set(fresh.map((e) => e.id))
  const byId = new Map([...stored, ...fresh].map((e) => [e.id, e]))
  const first = (event: NostrEvent) => {
    const p = definitionsFirst(
      keys.state.channels,
      event,
      (id) => atHub.has(id),
      (id) => byId.get(id),
      now,
    )
    // A definition in effect not held here to send first: the event must not go (as the node's
    // outbox), or this hub would take the channel for open.
    if ('refuse' in p) throw new Error(`not sent: ${p.refuse}`)
    return p.first
  }
  return { keys, first }
}
