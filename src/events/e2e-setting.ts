import { e2eError } from './e2e-codes.js'
import type { EventTemplate, NostrEvent } from './event.js'
import { Kind } from './kinds.js'

/** The `d` of the fleet's encryption setting (kind 34145). */
export const e2eSettingD = 'kith-e2e'

/**
 * `kith fleet encrypt [on|off]`: the fleet's encryption setting (kind 34145, kith-e2e/1 "Turning
 * it on"). Which settings count, and what they decide, is grants/e2e-sealing (it needs the grants).
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
