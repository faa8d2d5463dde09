import { KithError } from '../errors.js'

export function parsePort(text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback
  const n = Number(text)
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    throw new KithError('usage', `--port must be 0-65535, got ${text}`)
  }
  return n
}

export function parseCount(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback
  const n = Number(text)
  if (!Number.isInteger(n) || n < 0) {
    throw new KithError('usage', `${name} must be a whole number ≥ 0, got ${text}`)
  }
  return n
}
