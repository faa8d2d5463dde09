import { sha256 } from '@noble/hashes/sha2.js'
import { concatBytes, utf8ToBytes } from '@noble/hashes/utils.js'

/**
 * A deterministic byte stream, SHA-256(seed ‖ u32 counter) blocks, for frozen test vectors only:
 * real pairings use the system's randomness.
 */
export function makeSeededRandom(seed: string): (n: number) => Uint8Array {
  let counter = 0
  let pool = new Uint8Array(0)
  return (n: number) => {
    while (pool.length < n) {
      const c = new Uint8Array(4)
      new DataView(c.buffer).setUint32(0, counter++)
      pool = concatBytes(pool, sha256(concatBytes(utf8ToBytes(seed), c)))
    }
    const out = pool.slice(0, n)
    pool = pool.slice(n)
    return out
  }
}
