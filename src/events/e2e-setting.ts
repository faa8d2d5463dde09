import { KithError } from '../errors.js'
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
  rotateEverySeconds?: number,
): EventTemplate {
  return {
    kind: Kind.FleetSetting,
    created_at: createdAt,
    tags: [
      ['d', e2eSettingD],
      ['fleet', fleet],
      ['encrypt', encrypt ? 'on' : 'off'],
      ...(rotateEverySeconds === undefined ? [] : [['rotate', String(rotateEverySeconds)]]),
    ],
    content: '',
  }
}

/**
 * How often a channel's epoch is replaced even when nobody left (kith-e2e/1, "Periodic
 * rotation"), so one leaked epoch key opens a bounded window of a channel: a week unless the
 * setting says otherwise, between an hour and a year.
 */
export const defaultRotateSeconds = 7 * 86_400
export const minRotateSeconds = 3_600
export const maxRotateSeconds = 365 * 86_400

/** The period a setting's `rotate` tag names, or the default when it names none that is valid. */
export function rotateEveryOf(event: Pick<NostrEvent, 'tags'> | undefined): number {
  const v = event?.tags.find((t) => t[0] === 'rotate')?.[1]
  if (v === undefined || !/^[0-9]{1,9}$/.test(v)) return defaultRotateSeconds
  const n = Number(v)
  return n < minRotateSeconds || n > maxRotateSeconds ? defaultRotateSeconds : n
}

/** The period a setting names itself (a valid `rotate` tag), to repeat it when re-signing. */
export function rotateTagOf(event: Pick<NostrEvent, 'tags'> | undefined): number | undefined {
  const named = event?.tags.some((t) => t[0] === 'rotate') === true
  return named ? rotateEveryOf(event) : undefined
}

/** `7d`, `12h`, `90m` or seconds as a rotation period; throws `usage` outside the bounds. */
export function parseRotatePeriod(text: string): number {
  const m = /^([0-9]{1,6})([smhd]?)$/.exec(text.trim())
  const unit = { '': 1, s: 1, m: 60, h: 3_600, d: 86_400 }[m?.[2] ?? '']
  const n = m === null || unit === undefined ? NaN : Number(m[1]) * unit
  if (!(n >= minRotateSeconds && n <= maxRotateSeconds))
    throw new KithError(
      'usage',
      `a rotation period is like 7d, 12h or 90m, between 1h and 365d (got ${JSON.stringify(text)})`,
    )
  return n
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
