import { parseArgs, type ParseArgsConfig } from 'node:util'
import { KithError } from '../errors.js'

type Options = NonNullable<ParseArgsConfig['options']>

/** node:util parseArgs with strict checking, its errors turned into usage errors with help. */
export function parseCommandArgs<O extends Options>(argv: string[], options: O, usage: string) {
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals: true })
  } catch (cause) {
    const message = cause instanceof Error ? cause.message : String(cause)
    throw new KithError('usage', `${message}\n\n${usage}`, { cause })
  }
}

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
