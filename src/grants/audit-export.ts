import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'
import { KithError } from '../errors.js'
import { makeEpoch, type Epoch } from '../events/e2e-epoch.js'
import { isSealed, openSealed, sealedEpochId } from '../events/e2e-seal.js'
import { parseEvent, type NostrEvent } from '../events/event.js'

/**
 * The lines of an audit export (kith-agents, "Audit", "Exports of a sealed fleet"): each one a
 * signed Nostr event as the hub carried it, or a disclosed epoch key,
 * `{"kith-audit-epoch":{"channel":…,"number":…,"key":<64 hex>}}`, that opens the sealed events
 * of that epoch. A key proves nothing by itself: a sealed event's signature covers its
 * ciphertext, NIP-44 authenticates the ciphertext under the key, and the plaintext names its
 * author, kind, time and channel (events/e2e-seal.ts openSealed), so a wrong key opens nothing
 * and a right one cannot make an event say what its author did not seal.
 */
export type ExportLine = { event: NostrEvent } | { epoch: Epoch }

const epochField = 'kith-audit-epoch'

/** An epoch key as an export line. */
export function epochLine(epoch: Epoch): string {
  return JSON.stringify({
    [epochField]: { channel: epoch.channel, number: epoch.number, key: bytesToHex(epoch.key) },
  })
}

/** One parsed export line; throws KithError (`invalid`) when it is neither. */
export function parseExportLine(value: unknown): ExportLine {
  if (typeof value === 'object' && value !== null && epochField in value) {
    const e = (value as Record<string, unknown>)[epochField] as Record<string, unknown> | null
    if (
      typeof e !== 'object' ||
      e === null ||
      typeof e.channel !== 'string' ||
      typeof e.number !== 'number' ||
      typeof e.key !== 'string' ||
      !/^[0-9a-f]{64}$/.test(e.key)
    )
      throw new KithError('invalid', 'an epoch key line has a channel, a number and a 64-hex key')
    // makeEpoch computes the id from channel, number and key: nothing here to take on trust.
    return { epoch: makeEpoch(e.channel, e.number, hexToBytes(e.key)) }
  }
  return { event: parseEvent(value) }
}

/**
 * `event` opened with `keyOf`'s key when it is sealed and a key opens it; the event itself
 * otherwise (still sealed: no key, or a refusal, counted by the caller). The caller has checked
 * the sealed form's signature.
 */
export function openedWith(
  event: NostrEvent,
  keyOf: ((epochId: string) => Epoch | undefined) | undefined,
): NostrEvent {
  if (keyOf === undefined || !isSealed(event)) return event
  const id = sealedEpochId(event)
  if (id === undefined || keyOf(id) === undefined) return event
  try {
    return openSealed(event, keyOf)
  } catch (err) {
    // tampered or misbound under a key that is the epoch's: it stays sealed, and is said so.
    if (!(err instanceof KithError)) throw err
    return event
  }
}
