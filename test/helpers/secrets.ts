import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf, type NostrEvent } from '../../src/events/event.js'
import { signGrant, type GrantSpec } from '../../src/grants/grant.js'

/**
 * Keys a test made, by pubkey: a grant carries its subject's proof (kith-grants), so a test that
 * grants a key must hold that key's secret. Tests make keys with `newKey` (or `remember` one)
 * and grant with `secretOf(subject)`.
 */
const secrets = new Map<string, Uint8Array>()

export function remember(sk: Uint8Array): string {
  const pk = publicKeyOf(sk)
  secrets.set(pk, sk)
  return pk
}

export function newKey(): { sk: Uint8Array; pk: string } {
  const sk = generateSecretKey()
  return { sk, pk: remember(sk) }
}

export function secretOf(pk: string): Uint8Array {
  const sk = secrets.get(pk)
  if (sk === undefined) throw new Error(`test key ${pk.slice(0, 8)}… was not made with newKey`)
  return sk
}

/** A fresh secret key, remembered for `secretOf`. */
export function newSecret(): Uint8Array {
  return newKey().sk
}

/** A grant signed by `issuerSk`, with its subject's proof (the subject was made with newKey). */
export function signTestGrant(
  spec: Omit<GrantSpec, 'proof'>,
  issuerSk: Uint8Array,
  createdAt: number,
): NostrEvent {
  return signGrant(spec, issuerSk, secretOf(spec.subject), createdAt)
}
