import type { EventTemplate } from './event.js'
import { Kind } from './kinds.js'

/**
 * Pairing lane events (kind 24140, kith-pair/1): one kith-pair/1 message (its JSON, read by
 * pairing/protocol's parsePairMessage) in room `pid` (one `d` tag), signed by a throwaway key.
 * The CLI's lane (pairing/cli-lane.ts) and the browser's (pairing/relay-lane.ts) both make and
 * subscribe with these.
 */
export function makePairingEvent(pid: string, message: object, createdAt: number): EventTemplate {
  return {
    kind: Kind.Pairing,
    created_at: createdAt,
    tags: [['d', pid]],
    content: JSON.stringify(message),
  }
}

/** The one subscription a hub's pairing lane takes for room `pid` (kith-hub/1), as sent. */
export function pairingLaneFilter(pid: string): Record<string, unknown> {
  return { kinds: [Kind.Pairing], '#d': [pid] }
}
