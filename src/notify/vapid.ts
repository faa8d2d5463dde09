import { join } from 'node:path'
import { p256 } from '@noble/curves/nist.js'
import { generateSecretKey } from 'nostr-tools/pure'
import { homeFiles } from '../identity/home.js'
import { readKeyFile, writeKeyFile } from '../identity/key-file.js'

/** This node's VAPID key pair (RFC 8292), as web-push takes it: base64url strings. */
export interface Vapid {
  publicKey: string
  privateKey: string
  /** Who push services may contact about this sender (RFC 8292 `sub`). */
  subject: string
}

const b64url = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url')

/** A P-256 secret: 32 random bytes below the curve order (retry in the ~2^-32 case). */
function newP256Secret(): Uint8Array {
  for (;;) {
    const candidate = generateSecretKey()
    if (p256.utils.isValidSecretKey(candidate)) return candidate
  }
}

/**
 * The VAPID key of this node, made (0600, KITH_HOME/vapid.key) on first use. It only signs the
 * push services' authorization headers; the browsers learn its public half from the node's
 * push-sender event.
 */
export function loadOrCreateVapid(home: string, subject = 'mailto:kith@localhost'): Vapid {
  const path = join(home, homeFiles.vapidKey)
  let secret = readKeyFile(path)
  if (secret === undefined) {
    try {
      writeKeyFile(path, newP256Secret())
    } catch (err) {
      // Another process (kith notify test beside kith up) made it first: use theirs.
      if ((err as { code?: string }).code !== 'key-exists') throw err
    }
    secret = readKeyFile(path)!
  }
  return {
    publicKey: b64url(p256.getPublicKey(secret, false)),
    privateKey: b64url(secret),
    subject,
  }
}
