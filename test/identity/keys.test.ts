import { chmodSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { bytesToHex } from '@noble/hashes/utils.js'
import { publicKeyOf } from '../../src/events/event.js'
import { readConfig } from '../../src/identity/config.js'
import { initIdentity, loadIdentity } from '../../src/identity/keys.js'
import { tempDir } from '../helpers/tmp.js'

const mode = (p: string) => statSync(p).mode & 0o777

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (err) {
    return (err as { code?: string }).code
  }
  return undefined
}

describe('initIdentity', () => {
  it('creates owner and device keys 0600 in a 0700 home, and a config', () => {
    const home = join(tempDir(), 'home')
    const r = initIdentity({ home, name: 'laptop' })
    expect(r.created).toEqual({ owner: true, device: true, config: true })
    expect(mode(home)).toBe(0o700)
    expect(mode(join(home, 'owner.key'))).toBe(0o600)
    expect(mode(join(home, 'device.key'))).toBe(0o600)
    expect(readConfig(home)).toEqual({
      version: 1,
      name: 'laptop',
      owner: r.ownerPubkey,
      fleet: r.ownerPubkey,
      hubs: [],
    })
    expect(r.ownerPubkey).not.toBe(r.devicePubkey)
  })

  it('never overwrites a key when run again, and says so', () => {
    const home = join(tempDir(), 'home')
    const first = initIdentity({ home })
    const ownerBytes = readFileSync(join(home, 'owner.key'))
    const second = initIdentity({ home, name: 'renamed' })
    expect(second.created).toEqual({ owner: false, device: false, config: false })
    expect(second.ownerPubkey).toBe(first.ownerPubkey)
    expect(second.devicePubkey).toBe(first.devicePubkey)
    expect(readFileSync(join(home, 'owner.key'))).toEqual(ownerBytes)
    expect(readConfig(home)?.name).toBe('renamed')
  })

  it('adopts an existing owner secret, and refuses a different one later', () => {
    const home = join(tempDir(), 'home')
    const sk = generateSecretKey()
    const r = initIdentity({ home, ownerSecret: sk })
    expect(r.ownerPubkey).toBe(publicKeyOf(sk))
    expect(readFileSync(join(home, 'owner.key'), 'utf8').trim()).toBe(bytesToHex(sk))
    expect(initIdentity({ home, ownerSecret: sk }).created.owner).toBe(false)
    expect(codeOf(() => initIdentity({ home, ownerSecret: generateSecretKey() }))).toBe(
      'key-mismatch',
    )
  })

  it('does not create an owner key on a machine that already belongs to an owner', () => {
    const home = join(tempDir(), 'home')
    const owner = publicKeyOf(generateSecretKey())
    initIdentity({ home })
    // Simulate a joined device: config names an owner, no owner.key here.
    writeFileSync(
      join(home, 'config.json'),
      JSON.stringify({ version: 1, name: 'devbox', owner, hubs: [] }),
    )
    rmSync(join(home, 'owner.key'))
    const r = initIdentity({ home })
    expect(r.created.owner).toBe(false)
    expect(r.ownerKeyHere).toBe(false)
    expect(r.ownerPubkey).toBe(owner)
  })
})

describe('loadIdentity', () => {
  it('refuses to start with a key file others can read, naming the fix', () => {
    const home = join(tempDir(), 'home')
    initIdentity({ home })
    chmodSync(join(home, 'device.key'), 0o644)
    let message = ''
    try {
      loadIdentity(home)
    } catch (err) {
      expect((err as { code?: string }).code).toBe('insecure-key-file')
      message = (err as Error).message
    }
    expect(message).toContain(`chmod 600 '${join(home, 'device.key')}'`)
    chmodSync(join(home, 'device.key'), 0o600)
    chmodSync(join(home, 'owner.key'), 0o640)
    expect(codeOf(() => loadIdentity(home))).toBe('insecure-key-file')
  })

  it('says not-initialized for an empty home, and bad-key for a corrupt key', () => {
    const home = join(tempDir(), 'home')
    expect(codeOf(() => loadIdentity(home))).toBe('not-initialized')
    initIdentity({ home })
    writeFileSync(join(home, 'device.key'), 'garbage\n', { mode: 0o600 })
    expect(codeOf(() => loadIdentity(home))).toBe('bad-key')
  })

  it('refuses a config that is not JSON instead of overwriting it', () => {
    const home = join(tempDir(), 'home')
    initIdentity({ home })
    writeFileSync(join(home, 'config.json'), '{oops')
    expect(codeOf(() => loadIdentity(home))).toBe('config')
    expect(codeOf(() => initIdentity({ home }))).toBe('config')
    expect(readFileSync(join(home, 'config.json'), 'utf8')).toBe('{oops')
  })
})
