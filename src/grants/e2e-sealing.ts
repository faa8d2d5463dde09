import { parseFleetSetting } from '../events/e2e-setting.js'
import { compareNewestFirst, type NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { definitionSkewSeconds, type ChannelBook } from './channels.js'

/**
 * How far a setting's `created_at` may run ahead of the clock that judges it: as for channel
 * definitions, since a setting dated ahead would win newest-wins over every correction before it.
 */
export const settingSkewSeconds = definitionSkewSeconds

/** What the fleet's settings amount to (kith-e2e/1, "Turning it on"), with why, for status. */
export interface Sealing {
  /** Whether the fleet seals what its members send now. */
  on: boolean
  /** The setting that decides (the newest that counts); undefined when none counts. */
  decidedBy: NostrEvent | undefined
  /** True when a setting that counts turned sealing on at some time: the fleet sealed once. */
  sealedOnce: boolean
  /** Settings that decide nothing, with why (their author had no standing then, dated ahead). */
  ignored: { event: NostrEvent; reason: string }[]
}

/**
 * The fleet's sealing, decided once for node, web app and service worker. A setting counts when
 * it is well formed for this fleet, dated no more than `settingSkewSeconds` ahead of `now`, and
 * its author was the founder or an admin at its `created_at` (not now: a removal later does not
 * undo it, as for channel definitions). The newest that counts decides (larger `created_at`, on
 * a tie the lower id). So "on" is sticky: it ends only with a newer explicit "off" by someone
 * with standing at that off's date. No setting that counts: off.
 */
export function fleetSealing(
  settings: Iterable<NostrEvent>,
  channels: ChannelBook,
  fleet: string,
  now: number,
): Sealing {
  let best: { event: NostrEvent; on: boolean } | undefined
  let sealedOnce = false
  const ignored: Sealing['ignored'] = []
  const seen = new Set<string>()
  for (const e of settings) {
    if (seen.has(e.id)) continue
    seen.add(e.id)
    let on: boolean
    try {
      on = parseFleetSetting(e, fleet)
    } catch {
      // Not this fleet's well-formed setting: it decides nothing, and says nothing either.
      continue
    }
    if (e.created_at > now + settingSkewSeconds) {
      ignored.push({ event: e, reason: 'dated ahead of the clock' })
      continue
    }
    if (!channels.hadAuthority(e.pubkey, e.created_at, Kind.FleetSetting)) {
      ignored.push({ event: e, reason: 'its author was not the founder or an admin at its date' })
      continue
    }
    if (on) sealedOnce = true
    if (best === undefined || compareNewestFirst(e, best.event) < 0) best = { event: e, on }
  }
  return { on: best?.on ?? false, decidedBy: best?.event, sealedOnce, ignored }
}

/** One line on why a fleet that sealed once does not seal now; undefined when that is not so. */
export function sealingLapse(s: Sealing): string | undefined {
  if (s.on || !s.sealedOnce || s.decidedBy === undefined) return undefined
  const at = new Date(s.decidedBy.created_at * 1000).toISOString()
  return `this fleet sealed, and stopped: "off" signed by ${s.decidedBy.pubkey.slice(0, 12)}… at ${at}`
}
