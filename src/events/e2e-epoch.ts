import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js'
import { e2eError } from './e2e-codes.js'

/**
 * One epoch of one channel (kith-e2e/1, "Epochs"): a random 32-byte key, used directly as the
 * NIP-44 v2 conversation key of everything sealed in the channel while the epoch is current.
 */
export interface Epoch {
  channel: string
  /** 0 for the channel's first epoch; each rotation makes number + 1. */
  number: number
  /** 64 hex: the epoch id (epochId below), which names the key without revealing it. */
  id: string
  key: Uint8Array
  /**
   * When the epoch began, as far as its holder knows: when it was made here, or the date of the
   * earliest envelope that brought it. Periodic rotation replaces it once it is old.
   */
  since?: number
}

const epochLabel = 'kith-e2e/1 epoch:'

/**
 * The highest epoch number (kith-e2e/1, "Epochs"): rotations happen on removals, so a real
 * channel never comes near it; a number above it is malformed. Without a bound, a member could
 * hand out epoch 2^53-1 and make every later rotation fail; at the bound, a rotation makes
 * another epoch of the same number instead (Rotation), so the channel keeps sealing.
 */
export const maxEpochNumber = 2 ** 31 - 1

/**
 * The epoch id: `sha256(utf8("kith-e2e/1 epoch:" + channel + ":" + number + ":") || key)`, hex.
 * Binding channel and number means a key handed out for one channel or epoch number cannot be
 * passed off as another's (`wrong-epoch`), and anyone holding the key can check the id.
 */
export function epochId(channel: string, number: number, key: Uint8Array): string {
  if (key.length !== 32) throw e2eError('malformed', 'an epoch key is 32 bytes')
  if (!Number.isSafeInteger(number) || number < 0 || number > maxEpochNumber)
    throw e2eError('malformed', `an epoch number is an integer from 0 to ${maxEpochNumber}`)
  return bytesToHex(sha256(concatBytes(utf8ToBytes(`${epochLabel}${channel}:${number}:`), key)))
}

/** An epoch from its parts, checking that `id` (when given) is the id of this key. */
export function makeEpoch(channel: string, number: number, key: Uint8Array, id?: string): Epoch {
  const actual = epochId(channel, number, key)
  if (id !== undefined && id !== actual)
    throw e2eError('wrong-epoch', `the key is not the key of epoch ${id.slice(0, 12)}…`)
  return { channel, number, id: actual, key }
}

/** A new epoch with a fresh key from `random` (crypto.getRandomValues, in Node and browsers). */
export function newEpoch(
  channel: string,
  number: number,
  random: (n: number) => Uint8Array,
): Epoch {
  return makeEpoch(channel, number, random(32))
}

export function epochKeyHex(epoch: Epoch): string {
  return bytesToHex(epoch.key)
}

export function epochKeyFromHex(hex: string): Uint8Array {
  if (!/^[0-9a-f]{64}$/.test(hex)) throw e2eError('malformed', 'an epoch key is 64 hex')
  return hexToBytes(hex)
}

/**
 * The current epoch of a channel among those held (kith-e2e/1, "Which epoch seals"): the
 * highest number; among epochs of that number, the lowest id. Two members who rotate at once
 * make two epochs of the same number; every member holds both (each went to all of them) and
 * picks the same one, so the channel converges on it while both stay readable.
 */
export function currentEpoch<E extends Pick<Epoch, 'number' | 'id'>>(
  epochs: Iterable<E>,
): E | undefined {
  let best: E | undefined
  for (const e of epochs) {
    if (
      best === undefined ||
      e.number > best.number ||
      (e.number === best.number && e.id < best.id)
    )
      best = e
  }
  return best
}
