import { KithError } from '../errors.js'
import { isHex64, type NostrEvent } from './event.js'

/** A NIP-01 filter. Tag conditions live in `tags`, keyed by the single letter after `#`. */
export interface Filter {
  ids?: string[]
  authors?: string[]
  kinds?: number[]
  since?: number
  until?: number
  limit?: number
  tags?: Record<string, string[]>
}

export interface FilterLimits {
  /** Most values one array (ids, authors, kinds, one #tag) may hold. */
  maxValues: number
  /** Most tag conditions (#e, #p, ...) in one filter. */
  maxTagConditions: number
  /** Longest tag value accepted in a filter. */
  maxTagValueLength: number
}

export const defaultFilterLimits: FilterLimits = {
  maxValues: 1000,
  maxTagConditions: 8,
  maxTagValueLength: 1024,
}

function parseList<T>(
  name: string,
  value: unknown,
  limits: FilterLimits,
  check: (item: unknown) => item is T,
  what: string,
): T[] {
  if (!Array.isArray(value)) throw new KithError('invalid', `filter ${name} must be an array`)
  if (value.length > limits.maxValues) {
    throw new KithError(
      'invalid',
      `filter too wide: ${name} has ${value.length} values (max ${limits.maxValues})`,
    )
  }
  for (const item of value as unknown[]) {
    if (!check(item)) throw new KithError('invalid', `filter ${name} must hold ${what}`)
  }
  return value as T[]
}

function isKindNumber(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 65535
}

function parseTimestamp(name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
    throw new KithError('invalid', `filter ${name} must be a non-negative integer`)
  }
  return v
}

/** Parses one untrusted filter object; throws KithError('invalid') naming the problem. */
export function parseFilter(value: unknown, limits: FilterLimits = defaultFilterLimits): Filter {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new KithError('invalid', 'filter must be a JSON object')
  }
  const filter: Filter = {}
  let tagConditions = 0
  const isTagValue = (v: unknown): v is string =>
    typeof v === 'string' && v.length <= limits.maxTagValueLength
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    switch (key) {
      case 'ids':
        filter.ids = parseList(key, v, limits, isHex64, '64-char lowercase hex ids')
        break
      case 'authors':
        filter.authors = parseList(key, v, limits, isHex64, '64-char lowercase hex pubkeys')
        break
      case 'kinds':
        filter.kinds = parseList(key, v, limits, isKindNumber, 'integers 0-65535')
        break
      case 'since':
      case 'until':
        filter[key] = parseTimestamp(key, v)
        break
      case 'limit':
        filter.limit = parseTimestamp(key, v)
        break
      default: {
        if (key.length !== 2 || key[0] !== '#' || !/^[a-zA-Z]$/.test(key[1] ?? '')) {
          throw new KithError('invalid', `unknown filter field ${JSON.stringify(key)}`)
        }
        if (++tagConditions > limits.maxTagConditions) {
          throw new KithError(
            'invalid',
            `filter too wide: more than ${limits.maxTagConditions} tag conditions`,
          )
        }
        const values = parseList(
          key,
          v,
          limits,
          isTagValue,
          `strings (max ${limits.maxTagValueLength} chars)`,
        )
        ;(filter.tags ??= {})[key.slice(1)] = values
      }
    }
  }
  return filter
}

/**
 * NIP-01 matching on every field. `since: 0` and `until: 0` are real bounds (a falsy check would
 * ignore them); an empty list matches nothing. `limit` does not affect matching.
 */
export function matchFilter(filter: Filter, event: NostrEvent): boolean {
  if (filter.ids !== undefined && !filter.ids.includes(event.id)) return false
  if (filter.authors !== undefined && !filter.authors.includes(event.pubkey)) return false
  if (filter.kinds !== undefined && !filter.kinds.includes(event.kind)) return false
  if (filter.since !== undefined && event.created_at < filter.since) return false
  if (filter.until !== undefined && event.created_at > filter.until) return false
  if (filter.tags !== undefined) {
    for (const [name, values] of Object.entries(filter.tags)) {
      const hit = event.tags.some(
        (tag) => tag[0] === name && tag[1] !== undefined && values.includes(tag[1]),
      )
      if (!hit) return false
    }
  }
  return true
}

export function matchFilters(filters: readonly Filter[], event: NostrEvent): boolean {
  return filters.some((f) => matchFilter(f, event))
}

/** Serializes a parsed filter back to its NIP-01 wire form. */
export function toWireFilter(filter: Filter): Record<string, unknown> {
  const { tags, ...rest } = filter
  const wire: Record<string, unknown> = { ...rest }
  for (const [name, values] of Object.entries(tags ?? {})) wire[`#${name}`] = values
  return wire
}
