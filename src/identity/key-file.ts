import {
  closeSync,
  fsyncSync,
  linkSync,
  openSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs'
import { randomBytes } from 'node:crypto'
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'
import { KithError } from '../errors.js'

function isMissing(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === 'ENOENT'
}

/**
 * Refuses a key file that group or others may read or write, as ssh does, and says how to fix
 * it. A secret that others could read must be assumed leaked, so the node does not start.
 */
export function assertPrivateFile(path: string): void {
  const mode = statSync(path).mode & 0o777
  if ((mode & 0o077) !== 0) {
    throw new KithError(
      'insecure-key-file',
      `permissions ${mode.toString(8).padStart(4, '0')} for ${path} are too open; ` +
        `a key file must be readable by its owner only. Fix with: chmod 600 '${path}'`,
    )
  }
}

/** Reads a 32-byte secret key, or undefined when the file does not exist. */
export function readKeyFile(path: string): Uint8Array | undefined {
  let text: string
  try {
    assertPrivateFile(path)
    text = readFileSync(path, 'utf8').trim()
  } catch (err) {
    if (isMissing(err)) return undefined
    throw err
  }
  if (!/^[0-9a-f]{64}$/.test(text)) {
    throw new KithError('bad-key', `${path} does not hold a 64-hex secret key`)
  }
  return hexToBytes(text)
}

/**
 * Writes a secret key as 0600, never replacing an existing file: the key is written and synced
 * under a temporary name, then hard-linked into place (link fails if the name exists), so a
 * crash leaves either no key or a whole one.
 */
export function writeKeyFile(path: string, secretKey: Uint8Array): void {
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`
  const fd = openSync(tmp, 'wx', 0o600)
  try {
    writeSync(fd, `${bytesToHex(secretKey)}\n`)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  try {
    linkSync(tmp, path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new KithError('key-exists', `${path} already exists; it is never overwritten`, {
        cause: err,
      })
    }
    throw new KithError('io', `cannot write ${path}`, { cause: err })
  } finally {
    unlinkSync(tmp)
  }
}
