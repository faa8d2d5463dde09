// http_ece ships no types: the one call the tests make (RFC 8188/8291 decryption).
declare module 'http_ece' {
  import type { ECDH } from 'node:crypto'
  const ece: {
    decrypt(
      body: Buffer,
      params: { version: 'aes128gcm'; privateKey: ECDH; authSecret: string },
    ): Buffer
  }
  export default ece
}
