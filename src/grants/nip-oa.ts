import { schnorr } from '@noble/curves/secp256k1.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js'
import { isHex64, type NostrEvent } from '../events/event.js'

/**
 * NIP-OA owner attestation: `["auth", <owner>, <conditions>, <sig>]` on an agent's events, where
 * <sig> is the owner's BIP-340 signature of sha256("nostr:agent-auth:<agent>:<conditions>").
 * Third-party clients use it to show "authorized by <owner>"; Kith's own authority is the grant
 * chain, and this tag is produced from the same grant (conditions mirror its kinds and window).
 */
export type AuthTag = [name: 'auth', owner: string, conditions: string, sig: string]

function digest(agent: string, conditions: string): Uint8Array {
  return sha256(utf8ToBytes(`nostr:agent-auth:${agent}:${conditions}`))
}

/** NIP-26 style conditions: `kind=N` (any of), `created_at<T`, `created_at>T`, joined by `&`. */
export function authConditions(opts: { kinds?: number[]; nbf?: number; exp?: number }): string {
  const parts = (opts.kinds ?? []).map((k) => `kind=${k}`)
  if (opts.nbf !== undefined) parts.push(`created_at>${opts.nbf}`)
  if (opts.exp !== undefined) parts.push(`created_at<${opts.exp}`)
  return parts.join('&')
}

export function makeAuthTag(ownerSecret: Uint8Array, agent: string, conditions: string): AuthTag {
  const owner = bytesToHex(schnorr.getPublicKey(ownerSecret))
  const sig = bytesToHex(schnorr.sign(digest(agent, conditions), ownerSecret))
  return ['auth', owner, conditions, sig]
}

function conditionsHold(conditions: string, event: NostrEvent): boolean {
  if (conditions === '') return true
  const kinds: number[] = []
  for (const part of conditions.split('&')) {
    const m = /^(kind)=(\d+)$|^created_at([<>])(\d+)$/.exec(part)
    if (m === null) return false
    if (m[1] === 'kind') kinds.push(Number(m[2]))
    else if (m[3] === '<' && !(event.created_at < Number(m[4]))) return false
    else if (m[3] === '>' && !(event.created_at > Number(m[4]))) return false
  }
  return kinds.length === 0 || kinds.includes(event.kind)
}

/**
 * The owner an event's NIP-OA tag attests, or undefined when there is no valid tag: wrong shape,
 * self-attestation, conditions the event breaks, or a bad signature. Fails closed.
 */
export function verifyAuthTag(event: NostrEvent): string | undefined {
  const tag = event.tags.find((t) => t[0] === 'auth')
  if (tag === undefined || tag.length !== 4) return undefined
  const [, owner, conditions, sig] = tag as AuthTag
  if (!isHex64(owner) || owner === event.pubkey || !/^[0-9a-f]{128}$/.test(sig)) return undefined
  if (!conditionsHold(conditions, event)) return undefined
  try {
    return schnorr.verify(hexToBytes(sig), digest(event.pubkey, conditions), hexToBytes(owner))
      ? owner
      : undefined
  } catch {
    // Malformed points are simply not a valid attestation.
    return undefined
  }
}
