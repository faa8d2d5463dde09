import { base64urlnopad } from '@scure/base'
import { bytesToHex, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js'
import { PairError } from './errors.js'

export type PairRole = 'device' | 'owner'

/** What the QR / text code carries. Keys and ids are hex inside. */
export interface PairingCode {
  version: 1
  role: PairRole
  hub: string
  /** Room id: 16 bytes; the only field the hub learns. */
  pid: string
  /** The inviter's ephemeral public key (33-byte compressed secp256k1). */
  epkI: string
  /** QR secret, 16 bytes: never sent to the hub. */
  qs: string
  /** The owner pubkey the joiner pins (x-only, 32 bytes). */
  owner: string
  /** A label for the owner (their name), shown to the joiner. */
  name: string
  /** Unix seconds. */
  exp: number
}

export const codePrefix = 'kith-pair1:'

/**
 * Compact binary form: version u8, role u8 (0 device, 1 owner), exp u32 BE, pid 16, qs 16,
 * epkI 33, owner 32, name length u8 + UTF-8, then the hub URL as UTF-8 to the end.
 */
export function encodePairingCode(code: PairingCode): string {
  const name = utf8ToBytes(code.name).slice(0, 255)
  const hub = utf8ToBytes(code.hub)
  const out = new Uint8Array(1 + 1 + 4 + 16 + 16 + 33 + 32 + 1 + name.length + hub.length)
  const view = new DataView(out.buffer)
  let o = 0
  out[o++] = 1
  out[o++] = code.role === 'owner' ? 1 : 0
  view.setUint32(o, code.exp)
  o += 4
  for (const hex of [code.pid, code.qs, code.epkI, code.owner]) {
    const bytes = hexToBytes(hex)
    out.set(bytes, o)
    o += bytes.length
  }
  out[o++] = name.length
  out.set(name, o)
  o += name.length
  out.set(hub, o)
  return codePrefix + base64urlnopad.encode(out)
}

export function decodePairingCode(text: string): PairingCode {
  const t = text.trim()
  if (!t.startsWith(codePrefix)) throw new PairError('bad-code', 'missing kith-pair1: prefix')
  let bytes: Uint8Array
  try {
    bytes = base64urlnopad.decode(t.slice(codePrefix.length))
  } catch {
    throw new PairError('bad-code', 'not base64url')
  }
  if (bytes.length < 104 || bytes[0] !== 1 || (bytes[1] !== 0 && bytes[1] !== 1)) {
    throw new PairError('bad-code', 'unknown version or truncated')
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const take = (from: number, len: number) => bytesToHex(bytes.slice(from, from + len))
  const nameLen = bytes[103]!
  if (bytes.length < 104 + nameLen + 6) throw new PairError('bad-code', 'truncated')
  const decoder = new TextDecoder('utf-8', { fatal: true })
  let name: string
  let hub: string
  try {
    name = decoder.decode(bytes.slice(104, 104 + nameLen))
    hub = decoder.decode(bytes.slice(104 + nameLen))
  } catch {
    throw new PairError('bad-code', 'not UTF-8')
  }
  if (!/^wss?:\/\//.test(hub)) throw new PairError('bad-code', 'hub is not a ws:// or wss:// URL')
  return {
    version: 1,
    role: bytes[1] === 1 ? 'owner' : 'device',
    exp: view.getUint32(2),
    pid: take(6, 16),
    qs: take(22, 16),
    epkI: take(38, 33),
    owner: take(71, 32),
    name,
    hub,
  }
}
