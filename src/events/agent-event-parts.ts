import { KithError } from '../errors.js'
import { isHex64, type NostrEvent } from './event.js'
import { isChannelName } from './channel-def.js'

/**
 * Shared checks of the agent events' parsers (4142 requests, 4143 decisions, 4144 controls):
 * each failure is KithError('invalid', …, { reason }) with a stable reason.
 */
export type AgentEventReason = 'wrong-kind' | 'bad-tags' | 'bad-content'

export function invalid(reason: AgentEventReason, message: string): KithError {
  return new KithError('invalid', message, { reason })
}

export function requireKind(event: Pick<NostrEvent, 'kind'>, kind: number, what: string): void {
  if (event.kind !== kind) throw invalid('wrong-kind', `${what} is kind ${kind}, not ${event.kind}`)
}

/** The values of every tag called `name` (a tag without a value is malformed). */
export function tagValues(event: Pick<NostrEvent, 'tags'>, name: string): string[] {
  const out: string[] = []
  for (const t of event.tags) {
    if (t[0] !== name) continue
    const value = t[1]
    if (value === undefined || value === '') throw invalid('bad-tags', `a ${name} tag has no value`)
    out.push(value)
  }
  return out
}

/** The one value of tag `name`; absent or repeated is malformed. */
export function oneTag(event: Pick<NostrEvent, 'tags'>, name: string): string {
  const values = tagValues(event, name)
  if (values.length !== 1)
    throw invalid('bad-tags', `expected exactly one ${name} tag, found ${values.length}`)
  return values[0]!
}

/** The `h` tag: exactly one, a channel name (kith-chat/1). */
export function oneChannel(event: Pick<NostrEvent, 'tags'>): string {
  const channel = oneTag(event, 'h')
  const shown = JSON.stringify(channel)
  if (!isChannelName(channel)) throw invalid('bad-tags', `h is not a channel name: ${shown}`)
  return channel
}

/** The `fleet` tag: undefined when absent (older clients), the founder's key when one. */
export function optionalFleet(event: Pick<NostrEvent, 'tags'>): string | undefined {
  const values = tagValues(event, 'fleet')
  if (values.length > 1) throw invalid('bad-tags', 'it carries several fleet tags')
  const fleet = values[0]
  if (fleet !== undefined && !isHex64(fleet))
    throw invalid('bad-tags', 'fleet must be the founder 64-hex pubkey')
  return fleet
}

export function hexKey(value: string, what: string): string {
  if (!isHex64(value)) throw invalid('bad-tags', `${what} must be 64 lowercase hex characters`)
  return value
}

/** The content as a JSON object (not an array, not null). */
export function jsonObject(content: string, what: string): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(content)
  } catch (cause) {
    throw new KithError('invalid', `${what}: content is not JSON`, { cause, reason: 'bad-content' })
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid('bad-content', `${what}: content must be a JSON object`)
  return value as Record<string, unknown>
}

export function stringField(obj: Record<string, unknown>, key: string, what: string): string {
  const v = obj[key]
  if (typeof v !== 'string') throw invalid('bad-content', `${what}: ${key} must be a string`)
  return v
}
