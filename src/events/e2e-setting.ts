import { e2eError } from './e2e-codes.js'
import type { EventTemplate, NostrEvent } from './event.js'
import { Kind } from './kinds.js'

/** The `d` of the fleet's encryption setting (kind 34145). */
export const e2eSettingD = 'kith-e2e'

/**
 * `kith fleet encrypt [on|off]`: the fleet's encryption setting (kind 34145, kith-e2e/1 "Turning
 * it on"). Only a founder's or admin's setting counts (the node checks, as it checks channel
 * definitions' authors); the newest that counts decides.
 */
export function makeFleetSetting(
  fleet: string,
  encrypt: boolean,
  createdAt: number,
): EventTemplate {
  return {
    kind: Kind.FleetSetting,
    created_at: createdAt,
    tags: [
      ['d', e2eSettingD],
      ['fleet', fleet],
      ['encrypt', encrypt ? 'on' : 'off'],
    ],
    content: '',
  }
}

/** Whether a fleet setting turns encryption on; throws `malformed` for another event. */
export function parseFleetSetting(
  event: Pick<NostrEvent, 'kind' | 'tags'>,
  fleet: string,
): boolean {
  const tag = (name: string) => event.tags.filter((t) => t[0] === name)
  const d = tag('d')
  const f = tag('fleet')
  const enc = tag('encrypt')
  if (
    event.kind !== Kind.FleetSetting ||
    d.length !== 1 ||
    d[0]![1] !== e2eSettingD ||
    f.length !== 1 ||
    f[0]![1] !== fleet ||
    enc.length !== 1 ||
    (enc[0]![1] !== 'on' && enc[0]![1] !== 'off')
  )
    throw e2eError('malformed', 'not a kith-e2e fleet setting of this fleet')
  return enc[0]![1] === 'on'
}

/**
 * The fleet's setting: the newest (created_at, then lowest id) of the well-formed settings whose
 * author `mayDecide` (founder, or an admin when it was signed); off when there is none.
 */
export function fleetEncrypts(
  settings: readonly NostrEvent[],
  fleet: string,
  mayDecide: (event: NostrEvent) => boolean,
): boolean {
  let best: { event: NostrEvent; on: boolean } | undefined
  for (const e of settings) {
    let on: boolean
    try {
      on = parseFleetSetting(e, fleet)
    } catch {
      // A malformed setting decides nothing; others may still count.
      continue
    }
    if (!mayDecide(e)) continue
    if (
      best === undefined ||
      e.created_at > best.event.created_at ||
      (e.created_at === best.event.created_at && e.id < best.event.id)
    )
      best = { event: e, on }
  }
  return best?.on ?? false
}
