import { e2eSettingD, fleetEncrypts } from '../events/e2e-setting.js'
import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import type { GrantBook } from '../node/grant-book.js'
import type { NodeStore } from '../store/node-store.js'

/**
 * Whether the fleet seals its channels, as this machine's node.db knows its settings
 * (kith-e2e/1 "Turning it on": the newest setting by the founder or an admin decides).
 */
export function fleetSealsHere(store: NodeStore, book: GrantBook, fleet: string): boolean {
  const settings = store.events
    .query([{ kinds: [Kind.FleetSetting], tags: { d: [e2eSettingD] } }], {
      defaultLimit: 1_000,
      maxLimit: 1_000,
    })
    .map((r) => JSON.parse(r.raw) as NostrEvent)
  const channels = book.state.channels
  return fleetEncrypts(settings, fleet, (e) => channels.isAuthority(e.pubkey, e.created_at))
}
