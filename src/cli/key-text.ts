import { decode, npubEncode } from 'nostr-tools/nip19'
import { hexToBytes } from '@noble/hashes/utils.js'
import { KithError } from '../errors.js'

/** NIP-19 lives only at the CLI edge: inside, keys are hex. */
export function parsePubkeyText(text: string, what = 'public key'): string {
  const t = text.trim()
  if (/^[0-9a-f]{64}$/i.test(t)) return t.toLowerCase()
  if (t.startsWith('npub1')) {
    try {
      const decoded = decode(t)
      if (decoded.type === 'npub') return decoded.data
    } catch (cause) {
      throw new KithError('bad-key', `${what} is not a valid npub`, { cause })
    }
  }
  throw new KithError('bad-key', `${what} must be an npub1… or 64 hex characters`)
}

/** Reads an nsec or 64-hex secret; the message never includes the input. */
export function parseSecretText(text: string): Uint8Array {
  const t = text.trim()
  if (/^[0-9a-f]{64}$/i.test(t)) return hexToBytes(t.toLowerCase())
  if (t.startsWith('nsec1')) {
    try {
      const decoded = decode(t)
      if (decoded.type === 'nsec') return decoded.data
    } catch (cause) {
      throw new KithError('bad-key', 'the secret is not a valid nsec', { cause })
    }
  }
  throw new KithError('bad-key', 'the owner secret must be an nsec1… or 64 hex characters')
}

export function npub(hex: string): string {
  return npubEncode(hex)
}
