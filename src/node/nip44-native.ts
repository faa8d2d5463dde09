import { createCipheriv, hash, timingSafeEqual } from 'node:crypto'

/**
 * NIP-44 v2 decryption with Node's OpenSSL (ChaCha20, HMAC-SHA256, HKDF-Expand): the same checks,
 * in the same order, as nostr-tools' `nip44.decrypt`, about five times faster. A node opens every
 * sealed event it catches up (kith-e2e/1), 100,000 of them on a first sync, so this is on the
 * catch-up's critical path; sealing (one event at a time) keeps nostr-tools'. Throws an Error on
 * any invalid payload, as nostr-tools does; `test/node/nip44-native.test.ts` holds them to each
 * other on valid and invalid payloads.
 */
export function nip44DecryptNative(payload: string, conversationKey: Uint8Array): string {
  if (payload.length < 132) throw new Error(`invalid payload length: ${payload.length}`)
  if (payload[0] === '#') throw new Error('unknown encryption version')
  const data = Buffer.from(payload, 'base64')
  // Buffer's decoder skips what is not base64; a payload must be exactly the canonical encoding.
  if (data.toString('base64') !== payload) throw new Error('invalid base64')
  if (data.length < 99) throw new Error(`invalid data length: ${data.length}`)
  if (data[0] !== 2) throw new Error(`unknown encryption version ${data[0]}`)
  const nonce = data.subarray(1, 33)
  const ciphertext = data.subarray(33, data.length - 32)
  const mac = data.subarray(data.length - 32)
  // HKDF-Expand(SHA-256, conversation key, info = nonce, 76 bytes): three HMAC blocks, T(i) =
  // HMAC(key, T(i-1) || nonce || i), written one after another into `keys`.
  hmacInto(conversationKey, 33, keys, 0, (b) => {
    nonce.copy(b, 64)
    b[96] = 1
  })
  for (const i of [2, 3])
    hmacInto(conversationKey, 65, keys, (i - 1) * 32, (b) => {
      keys.copy(b, 64, (i - 2) * 32, (i - 1) * 32)
      nonce.copy(b, 96)
      b[128] = i
    })
  const chachaKey = keys.subarray(0, 32)
  const hmacKey = keys.subarray(44, 76)
  const macLength = 32 + ciphertext.length
  hmacInto(
    hmacKey,
    macLength,
    calculated,
    0,
    (b) => {
      nonce.copy(b, 64)
      ciphertext.copy(b, 96)
    },
    64 + macLength > inner.length ? Buffer.allocUnsafe(64 + macLength) : inner,
  )
  if (!timingSafeEqual(calculated, mac)) throw new Error('invalid MAC')
  // OpenSSL's chacha20 takes a 16-byte IV: the 32-bit block counter (0), then the 96-bit nonce.
  keys.copy(iv, 4, 32, 44)
  const decipher = createCipheriv('chacha20', chachaKey, iv)
  const head = decipher.update(ciphertext)
  const tail = decipher.final()
  return unpad(tail.length === 0 ? head : Buffer.concat([head, tail]))
}

/*
 * HMAC-SHA256 from two one-shot hashes (`crypto.hash`): a Hmac object costs ~2.5 µs to make and
 * a first sync decrypts 100,000 events with four each; this costs a fifth of that. Buffers are
 * reused between calls (decryption is synchronous, and each worker thread has its own module).
 */
const keys = Buffer.alloc(96)
const calculated = Buffer.alloc(32)
const iv = Buffer.alloc(16)
/** The inner block: 64 bytes of key ⊕ ipad, then the message (T(i-1) || nonce || i fits). */
const inner = Buffer.alloc(64 + 1024)
const outer = Buffer.alloc(96)

/** HMAC-SHA256(key, message) into out[at..at+32]; `write` puts the message at block[64..]. */
function hmacInto(
  key: Uint8Array,
  messageLength: number,
  out: Buffer,
  at: number,
  write: (block: Buffer) => void,
  block: Buffer = inner,
): void {
  // Keys here are 32 bytes (the conversation key, the HMAC key): under SHA-256's 64-byte block,
  // so they are zero-padded, not hashed (RFC 2104).
  if (key.length !== 32) throw new Error('invalid key length')
  for (let i = 0; i < 32; i++) {
    block[i] = key[i]! ^ 0x36
    outer[i] = key[i]! ^ 0x5c
  }
  block.fill(0x36, 32, 64)
  outer.fill(0x5c, 32, 64)
  write(block)
  outer.write(hash('sha256', block.subarray(0, 64 + messageLength), 'hex'), 64, 'hex')
  out.write(hash('sha256', outer, 'hex'), at, 'hex')
}

const utf8 = new TextDecoder('utf-8')

function calcPaddedLen(len: number): number {
  if (len <= 32) return 32
  const nextPower = 2 ** (Math.floor(Math.log2(len - 1)) + 1)
  const chunk = nextPower <= 256 ? 32 : nextPower / 8
  return chunk * (Math.floor((len - 1) / chunk) + 1)
}

/** NIP-44 v2 unpadding, with nostr-tools' extended (4-byte) length prefix for large plaintexts. */
function unpad(padded: Buffer): string {
  if (padded.length < 2) throw new Error('invalid padding')
  let len = padded.readUInt16BE(0)
  let prefix = 2
  if (len === 0) {
    if (padded.length < 6) throw new Error('invalid padding')
    len = padded.readUInt32BE(2)
    if (len < 65536) throw new Error('invalid padding')
    prefix = 6
  }
  const unpadded = padded.subarray(prefix, prefix + len)
  if (len < 1 || unpadded.length !== len || padded.length !== prefix + calcPaddedLen(len))
    throw new Error('invalid padding')
  return utf8.decode(unpadded)
}
