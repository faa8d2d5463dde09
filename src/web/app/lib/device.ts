import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf, type Enrollment, type NostrEvent } from '../../../browser-core.js'
import { idbClear, idbDelete, idbGet, idbPut } from './idb.js'

/**
 * This browser's device: a secp256k1 key made here with noble (nostr-tools), never sent
 * anywhere, and the enrollment it received when it was paired (its grant, the chain above it,
 * the fleet and its hubs).
 *
 * WebCrypto has no secp256k1, so the key cannot be a non-extractable CryptoKey. Where WebCrypto
 * is available (a secure context: https, or http on 127.0.0.1), the secret is stored encrypted
 * with AES-GCM under a non-extractable key kept in the same IndexedDB: the raw secret never
 * appears in the database, but anything that can run code in this origin can still unwrap it.
 * See the README ("The web app") for exactly what protects it.
 */
export interface DeviceRecord {
  version: 1
  pubkey: string
  /** The name the inviter granted (the grant's `name`). */
  name: string
  /** The inviter's owner key and name (from the code). */
  owner: string
  ownerName: string
  fleet: string
  hubs: string[]
  grant: NostrEvent
  chain: NostrEvent[]
  /** The fleet's setting and its author's grants, signed, from the enrollment (kith-e2e/1). */
  sealing?: NostrEvent[]
  /** Revocations learned at pairing (older records); a device now learns them from its hubs. */
  revocations?: NostrEvent[]
  pairedAt: number
  secret: { iv: Uint8Array<ArrayBuffer>; data: ArrayBuffer; key: CryptoKey } | { raw: Uint8Array }
}

export interface Device {
  record: DeviceRecord
  secret: Uint8Array
}

export function newDeviceKey(): { secret: Uint8Array; pubkey: string } {
  const secret = generateSecretKey()
  return { secret, pubkey: publicKeyOf(secret) }
}

async function wrap(secret: Uint8Array): Promise<DeviceRecord['secret']> {
  if (globalThis.crypto?.subtle === undefined) return { raw: secret.slice() }
  const key = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, [
    'encrypt',
    'decrypt',
  ])
  const iv = crypto.getRandomValues(new Uint8Array(12))
  const data = await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, key, new Uint8Array(secret))
  return { iv, data, key }
}

async function unwrap(s: DeviceRecord['secret']): Promise<Uint8Array> {
  if ('raw' in s) return s.raw
  return new Uint8Array(await crypto.subtle.decrypt({ name: 'AES-GCM', iv: s.iv }, s.key, s.data))
}

export async function loadDevice(): Promise<Device | undefined> {
  const record = await idbGet<DeviceRecord>('device', 'self')
  if (record === undefined) return undefined
  return { record, secret: await unwrap(record.secret) }
}

/** Stores the device once paired: after this, a reload opens the fleet. */
export async function saveDevice(
  key: { secret: Uint8Array; pubkey: string },
  code: { owner: string; name: string },
  enrollment: Enrollment,
  hubs: string[],
  grantedName: string,
): Promise<Device> {
  const record: DeviceRecord = {
    version: 1,
    pubkey: key.pubkey,
    name: grantedName,
    owner: code.owner,
    ownerName: code.name,
    fleet: enrollment.fleet,
    hubs,
    grant: enrollment.grant,
    chain: enrollment.chain,
    ...(enrollment.sealing === undefined ? {} : { sealing: enrollment.sealing }),
    pairedAt: Math.floor(Date.now() / 1000),
    secret: await wrap(key.secret),
  }
  await idbPut('device', 'self', record)
  // Ask the browser not to evict this origin's storage (it would lose the key).
  // (`persist` is a window API: the service worker, which shares this file, has none.)
  const storage = navigator.storage as { persist?: () => Promise<boolean> } | undefined
  await storage?.persist?.().catch(() => false)
  return { record, secret: key.secret }
}

/** Forgets this browser's device: key, grant, read marks and outbox. */
export async function forgetDevice(): Promise<void> {
  await idbDelete('device', 'self')
  await idbClear('prefs')
  await idbClear('outbox')
  await idbClear('events')
}
