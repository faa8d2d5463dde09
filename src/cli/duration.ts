import { KithError } from '../errors.js'

const units: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 }

/** "90s", "15m", "12h", "30d", "2w" → seconds. */
export function parseDuration(text: string): number {
  const m = /^(\d+)([smhdw])$/.exec(text.trim())
  if (m === null)
    throw new KithError('usage', `not a duration: ${text} (use e.g. 90s, 15m, 12h, 30d, 2w)`)
  const seconds = Number(m[1]) * units[m[2]!]!
  if (seconds <= 0) throw new KithError('usage', 'a duration must be positive')
  return seconds
}

/** `--since`: unix seconds, an ISO date, or a duration ago (15m, 2h, 30d) → unix seconds. */
export function parseSince(text: string): number {
  if (/^\d+$/.test(text)) return Number(text)
  if (/^\d+[smhdw]$/.test(text)) return Math.floor(Date.now() / 1000) - parseDuration(text)
  const t = Date.parse(text)
  if (Number.isNaN(t)) throw new KithError('usage', `--since: not a time: ${text}`)
  return Math.floor(t / 1000)
}
