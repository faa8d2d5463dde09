import { e2eError } from '../events/e2e-codes.js'
import { isSealed, sealedKinds } from '../events/e2e-seal.js'
import { parseFleetSetting, rotateEveryOf } from '../events/e2e-setting.js'
import { compareNewestFirst, type NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import type { KithError } from '../errors.js'
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
  /** Seconds after which a channel's epoch is replaced (the deciding setting's, or a week). */
  rotateEvery: number
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
  return {
    on: best?.on ?? false,
    decidedBy: best?.event,
    sealedOnce,
    ignored,
    rotateEvery: rotateEveryOf(best?.event),
  }
}

/** One line on why a fleet that sealed once does not seal now; undefined when that is not so. */
export function sealingLapse(s: Sealing): string | undefined {
  if (s.on || !s.sealedOnce || s.decidedBy === undefined) return undefined
  const at = new Date(s.decidedBy.created_at * 1000).toISOString()
  return `this fleet sealed, and stopped: "off" signed by ${s.decidedBy.pubkey.slice(0, 12)}… at ${at}`
}

/**
 * Whether the fleet sealed at the date `at`: decided by the settings dated before it, as
 * `fleetSealing` decides now. An event made while the fleet did not seal stays plaintext and
 * readable; one dated after "on" counted was made while it did.
 */
export function sealedAt(
  settings: Iterable<NostrEvent>,
  channels: ChannelBook,
  fleet: string,
  at: number,
  now: number,
): boolean {
  const before = [...settings].filter((e) => e.created_at < at)
  // The usual case, a fleet that never sealed, costs one pass and no standing checks.
  if (!before.some((e) => e.tags.some((t) => t[0] === 'encrypt' && t[1] === 'on'))) return false
  return fleetSealing(before, channels, fleet, now).on
}

/**
 * The refusal for an event a sealed fleet never passes on (kith-e2e/1, "Intake"): a sealed kind,
 * in a channel (`h`), in the clear, dated while the fleet sealed. A node of a sealed fleet never
 * signs one; one that comes anyway was made by a device that was kept from the setting (a hub
 * withholding it) or by a plain client, and taking it on would put the text on every hub it
 * reaches. Hubs and nodes refuse it at admission; undefined when the event may pass.
 */
export function plaintextRefusal(
  event: NostrEvent,
  settings: Iterable<NostrEvent>,
  channels: ChannelBook,
  fleet: string,
  now: number,
): KithError | undefined {
  if (!sealedKinds.has(event.kind) || isSealed(event)) return undefined
  if (!event.tags.some((t) => t[0] === 'h')) return undefined
  if (!sealedAt(settings, channels, fleet, event.created_at, now)) return undefined
  return e2eError(
    'plaintext',
    'this fleet seals its channels (kith fleet encrypt): a plaintext message is not taken; send it again from an up-to-date device',
  )
}
