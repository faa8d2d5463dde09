import { decrypt, encrypt } from 'nostr-tools/nip44'
import { describe, expect, it } from 'vitest'
import { nip44DecryptNative } from '../../src/node/nip44-native.js'

const key = new Uint8Array(32).fill(7)

/** What each implementation says of `payload`: the plaintext, or that it refused. */
function both(payload: string, k = key): [string, string] {
  const say = (f: () => string) => {
    try {
      return `ok:${f()}`
    } catch {
      return 'refused'
    }
  }
  return [say(() => decrypt(payload, k)), say(() => nip44DecryptNative(payload, k))]
}

describe('native NIP-44 v2 decryption agrees with nostr-tools', () => {
  it('on plaintexts of every padding boundary', () => {
    for (const n of [1, 2, 31, 32, 33, 64, 65, 255, 256, 257, 1000, 4096, 65535]) {
      const text = 'é'.repeat(Math.floor(n / 2)) + 'x'.repeat(n % 2)
      const payload = encrypt(text, key)
      expect(nip44DecryptNative(payload, key)).toBe(text)
    }
  })

  it('on random plaintexts under random keys, one after another (its buffers are reused)', () => {
    const random = (n: number) => crypto.getRandomValues(new Uint8Array(n))
    for (let i = 0; i < 300; i++) {
      const k = random(32)
      const text = 'x'.repeat(1 + ((i * 37) % 3000))
      const payload = encrypt(text, k)
      expect(both(payload, k)).toEqual([`ok:${text}`, `ok:${text}`])
    }
  })

  it('on refused payloads: changed MAC, ciphertext or nonce, another key, bad version, short, not base64', () => {
    const payload = encrypt('the deploy key is hunter2', key)
    const bytes = Buffer.from(payload, 'base64')
    const at = (i: number) => {
      const b = Buffer.from(bytes)
      b[i] = b[i]! ^ 1
      return b.toString('base64')
    }
    const cases = [
      at(bytes.length - 1), // MAC
      at(40), // ciphertext
      at(5), // nonce
      Buffer.concat([Buffer.of(1), bytes.subarray(1)]).toString('base64'), // version 1
      `#${payload.slice(1)}`,
      payload.slice(0, 100),
      `${payload.slice(0, -4)}!!!!`,
      payload.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
    ]
    for (const c of cases) expect(both(c)).toEqual(['refused', 'refused'])
    expect(both(payload, new Uint8Array(32).fill(8))).toEqual(['refused', 'refused'])
    expect(both(payload)).toEqual(['ok:the deploy key is hunter2', 'ok:the deploy key is hunter2'])
  })
})
