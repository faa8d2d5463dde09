import { secp256k1, schnorr } from '@noble/curves/secp256k1.js'
import { extract, expand } from '@noble/hashes/hkdf.js'
import { hmac } from '@noble/hashes/hmac.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js'
import { PairError } from './errors.js'

export const protocolLabel = 'kith-pair/1'

/** Length-prefixed concatenation (u16 big-endian length before each part): unambiguous. */
export function framed(parts: readonly Uint8Array[]): Uint8Array {
  const chunks: Uint8Array[] = []
  for (const p of parts) {
    if (p.length > 0xffff) throw new RangeError('transcript field too long')
    chunks.push(new Uint8Array([p.length >> 8, p.length & 0xff]), p)
  }
  return concatBytes(...chunks)
}

const text = (s: string) => utf8ToBytes(s)

/** cR = SHA-256(framed("kith-pair/1 commit", pid, epkR, nR)) */
export function commitment(pid: string, epkR: string, nR: string): string {
  return bytesToHex(
    sha256(
      framed([text(`${protocolLabel} commit`), hexToBytes(pid), hexToBytes(epkR), hexToBytes(nR)]),
    ),
  )
}

/** Checks a peer's ephemeral key: a valid compressed point, not our own. */
export function checkPeerKey(peer: string, own: string): void {
  if (peer === own) throw new PairError('equal-keys')
  try {
    if (!/^0[23][0-9a-f]{64}$/.test(peer)) throw new Error('not a compressed point')
    secp256k1.Point.fromBytes(hexToBytes(peer)).assertValidity()
  } catch {
    throw new PairError('bad-point')
  }
}

export function ephemeralKey(random: (n: number) => Uint8Array): {
  secret: Uint8Array
  pub: string
} {
  // Reject the (astronomically unlikely) out-of-range scalars rather than reduce them.
  for (;;) {
    const secret = random(32)
    if (secp256k1.utils.isValidSecretKey(secret)) {
      return { secret, pub: bytesToHex(secp256k1.getPublicKey(secret, true)) }
    }
  }
}

/** The x coordinate of the ECDH point. */
export function ecdhX(secret: Uint8Array, peer: string): Uint8Array {
  return secp256k1.getSharedSecret(secret, hexToBytes(peer), true).slice(1)
}

export interface TranscriptFields {
  role: string
  hub: string
  pid: string
  epkI: string
  owner: string
  name: string
  exp: number
  /** Empty in the test-only variant without a commitment. */
  commit: string
  nI: string
  epkR: string
  nR: string
}

/** TH: SHA-256 over every field both sides saw, framed, in this order. */
export function transcriptHash(f: TranscriptFields): Uint8Array {
  const exp = new Uint8Array(4)
  new DataView(exp.buffer).setUint32(0, f.exp)
  return sha256(
    framed([
      text(protocolLabel),
      text(f.role),
      text(f.hub),
      hexToBytes(f.pid),
      hexToBytes(f.epkI),
      hexToBytes(f.owner),
      text(f.name),
      exp,
      hexToBytes(f.commit),
      hexToBytes(f.nI),
      hexToBytes(f.epkR),
      hexToBytes(f.nR),
    ]),
  )
}

export interface HandshakeKeys {
  sas: string
  confirm: Uint8Array
  /** Encrypts what the joiner sends (NIP-44 v2 with this as conversation key). */
  joinerToInviter: Uint8Array
  inviterToJoiner: Uint8Array
}

/**
 * HKDF-SHA256: PRK = extract(salt = TH, ikm = ECDH-x ‖ qs); then the SAS (8 bytes as a big-endian
 * integer mod `sasModulus`, zero-padded to its digits) and three 32-byte keys.
 */
export function deriveKeys(
  shared: Uint8Array,
  qs: string,
  th: Uint8Array,
  sasModulus = 1_000_000,
): HandshakeKeys {
  const prk = extract(sha256, concatBytes(shared, hexToBytes(qs)), th)
  const out = (info: string, len: number) =>
    expand(sha256, prk, text(`${protocolLabel} ${info}`), len)
  const sasBytes = out('sas', 8)
  let n = 0n
  for (const b of sasBytes) n = (n << 8n) | BigInt(b)
  const digits = String(sasModulus - 1).length
  return {
    sas: String(n % BigInt(sasModulus)).padStart(digits, '0'),
    confirm: out('confirm', 32),
    joinerToInviter: out('R->I', 32),
    inviterToJoiner: out('I->R', 32),
  }
}

export function confirmationMac(key: Uint8Array, who: 'R' | 'I' | 'ack', th: Uint8Array): string {
  return bytesToHex(hmac(sha256, key, concatBytes(text(who), th)))
}

/**
 * An abort sent once the keys are derived: HMAC-SHA256(kConf, F("abort", from, TH, reason,
 * detail)), `from` being "I" or "R". Only the holder of the handshake keys can make it, so a hub
 * cannot forge the other side's reason (and cannot reflect one side's abort back to it).
 */
export function abortMac(
  key: Uint8Array,
  from: 'I' | 'R',
  th: Uint8Array,
  reason: string,
  detail: string,
): string {
  return bytesToHex(
    hmac(sha256, key, framed([text('abort'), text(from), th, text(reason), text(detail)])),
  )
}

/** Constant-time comparison of two hex MACs. */
export function sameMac(a: string, b: string): boolean {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return diff === 0
}

export function signTranscript(th: Uint8Array, deviceSecret: Uint8Array): string {
  return bytesToHex(schnorr.sign(th, deviceSecret))
}

export function verifyTranscriptSignature(th: Uint8Array, sig: string, pubkey: string): boolean {
  try {
    return schnorr.verify(hexToBytes(sig), th, hexToBytes(pubkey))
  } catch {
    // Malformed signature or key: not a proof.
    return false
  }
}
