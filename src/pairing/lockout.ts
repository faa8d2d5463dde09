import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { homeFiles } from '../identity/home.js'

const file = homeFiles.pairingFailures
const windowSeconds = 15 * 60
const maxFailures = 3

function read(home: string): number[] {
  try {
    const v = JSON.parse(readFileSync(join(home, file), 'utf8')) as unknown
    return Array.isArray(v) ? v.filter((x): x is number => typeof x === 'number') : []
  } catch {
    // No file (or an unreadable one) means no recorded failures.
    return []
  }
}

/** After 3 failed pairings in 15 minutes `kith pair` refuses until re-armed. */
export function isLocked(home: string, now: number): boolean {
  return read(home).filter((t) => t > now - windowSeconds).length >= maxFailures
}

export function recordFailure(home: string, now: number): void {
  const recent = read(home).filter((t) => t > now - windowSeconds)
  writeFileSync(join(home, file), JSON.stringify([...recent, now]), { mode: 0o600 })
}

export function rearm(home: string): void {
  writeFileSync(join(home, file), '[]', { mode: 0o600 })
}
