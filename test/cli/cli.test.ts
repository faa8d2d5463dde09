import { chmodSync, existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { nsecEncode, npubEncode } from 'nostr-tools/nip19'
import { bytesToHex } from '@noble/hashes/utils.js'
import { publicKeyOf } from '../../src/events/event.js'
import { runKith, startNodeProcess } from '../helpers/cli.js'
import { tempDir } from '../helpers/tmp.js'

describe('kith CLI', () => {
  it('explains itself and rejects unknown commands with exit 2', async () => {
    const home = join(tempDir(), 'h')
    const help = await runKith(['--help'], { home })
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/init[\s\S]*whoami[\s\S]*hub/)
    for (const cmd of ['init', 'whoami', 'hub']) {
      const r = await runKith([cmd, '--help'], { home })
      expect(r.code).toBe(0)
      expect(r.stdout).toMatch(new RegExp(`Usage: kith ${cmd}`))
    }
    const bogus = await runKith(['bogus'], { home })
    expect(bogus.code).toBe(2)
    expect(bogus.stderr).toMatch(/unknown command "bogus"/)
    const badFlag = await runKith(['init', '--nope'], { home })
    expect(badFlag.code).toBe(2)
    expect(badFlag.stderr).toMatch(/Unknown option '--nope'/)
    expect(existsSync(home)).toBe(false)
  })

  it('init creates keys once, prints npubs and never a secret; whoami shows them', async () => {
    const home = join(tempDir(), 'h')
    const first = await runKith(['init', '--name', 'laptop', '--json'], { home })
    expect(first.code).toBe(0)
    const r = JSON.parse(first.stdout) as { owner: string; device: string; created: object }
    expect(r.created).toEqual({ owner: true, device: true, config: true })
    expect(r.owner).toMatch(/^npub1/)
    const ownerHex = readFileSync(join(home, 'owner.key'), 'utf8').trim()
    const deviceHex = readFileSync(join(home, 'device.key'), 'utf8').trim()
    const again = await runKith(['init'], { home })
    expect(again.stdout).toMatch(/exists, kept/)
    expect(again.stdout).toMatch(/already initialised/)
    expect(readFileSync(join(home, 'owner.key'), 'utf8').trim()).toBe(ownerHex)
    const who = await runKith(['whoami', '--json'], { home })
    const w = JSON.parse(who.stdout) as Record<string, unknown>
    expect(w).toMatchObject({
      name: 'laptop',
      owner: r.owner,
      device: r.device,
      hubs: [],
      ownerKeyHere: true,
    })
    const human = await runKith(['whoami'], { home })
    expect(human.stdout).toContain(r.device)
    for (const out of [first, again, who, human]) {
      expect(out.stdout + out.stderr).not.toContain(ownerHex)
      expect(out.stdout + out.stderr).not.toContain(deviceHex)
    }
  })

  it('init --owner-key-stdin adopts an nsec or hex secret without echoing it', async () => {
    const sk = generateSecretKey()
    const home = join(tempDir(), 'h')
    const r = await runKith(['init', '--owner-key-stdin', '--json'], {
      home,
      input: `${nsecEncode(sk)}\n`,
    })
    expect(r.code).toBe(0)
    expect((JSON.parse(r.stdout) as { owner: string }).owner).toBe(npubEncode(publicKeyOf(sk)))
    expect(r.stdout + r.stderr).not.toContain(nsecEncode(sk))
    const hexHome = join(tempDir(), 'h2')
    const r2 = await runKith(['init', '--owner-key-stdin', '--json'], {
      home: hexHome,
      input: bytesToHex(sk),
    })
    expect((JSON.parse(r2.stdout) as { owner: string }).owner).toBe(npubEncode(publicKeyOf(sk)))
    const other = await runKith(['init', '--owner-key-stdin'], {
      home,
      input: bytesToHex(generateSecretKey()),
    })
    expect(other.code).toBe(1)
    expect(other.stderr).toMatch(/different owner key; it is never overwritten/)
  })

  it('init founds a sealed fleet unless --plain; an imported owner key leaves the setting to the hubs', async () => {
    const sealedHome = join(tempDir(), 'h')
    const founded = await runKith(['init', '--name', 'laptop', '--json'], { home: sealedHome })
    expect(founded.code, founded.stderr).toBe(0)
    const f = JSON.parse(founded.stdout) as { encrypt: boolean | null; encryptSetting: string }
    expect(f.encrypt).toBe(true)
    expect(f.encryptSetting).toMatch(/^[0-9a-f]{64}$/)
    const shown = await runKith(['fleet', 'encrypt', '--json'], { home: sealedHome })
    // Sealed, with the default rotation period (7 days).
    expect(JSON.parse(shown.stdout)).toEqual({ encrypt: true, rotateEverySeconds: 604800 })
    const status = await runKith(['status'], { home: sealedHome })
    expect(status.stdout).toMatch(/sealed +yes: hubs and relays carry only ciphertext/)
    // A second init founds nothing, so --plain has nothing to apply to.
    const late = await runKith(['init', '--plain'], { home: sealedHome })
    expect(late.code).toBe(2)
    expect(late.stderr).toMatch(/--plain applies only when kith init founds a fleet/)

    const plainHome = join(tempDir(), 'h')
    const plain = await runKith(['init', '--plain'], { home: plainHome })
    expect(plain.code, plain.stderr).toBe(0)
    expect(plain.stdout).toMatch(/encrypt +off \(--plain\)/)
    const off = await runKith(['fleet', 'encrypt', '--json'], { home: plainHome })
    expect(JSON.parse(off.stdout)).toEqual({ encrypt: false })
    const plainStatus = await runKith(['status', '--json'], { home: plainHome })
    expect(JSON.parse(plainStatus.stdout)).toMatchObject({ running: false, encrypt: false })

    const importedHome = join(tempDir(), 'h')
    const sk = bytesToHex(generateSecretKey())
    const both = await runKith(['init', '--owner-key-stdin', '--plain'], {
      home: importedHome,
      input: sk,
    })
    expect(both.code).toBe(2)
    expect(existsSync(importedHome)).toBe(false)
    const imported = await runKith(['init', '--owner-key-stdin', '--json'], {
      home: importedHome,
      input: sk,
    })
    expect((JSON.parse(imported.stdout) as { encrypt: unknown }).encrypt).toBeNull()
    const unset = await runKith(['fleet', 'encrypt', '--json'], { home: importedHome })
    expect(JSON.parse(unset.stdout)).toEqual({ encrypt: false })
  })

  it('refuses a bad owner secret without creating anything', async () => {
    const home = join(tempDir(), 'h')
    const r = await runKith(['init', '--owner-key-stdin'], { home, input: 'nsec1garbage' })
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(/nsec/)
    expect(r.stderr).not.toContain('garbage')
    expect(existsSync(join(home, 'owner.key'))).toBe(false)
    const empty = await runKith(['init', '--owner-key-stdin'], { home, input: '' })
    expect(empty.code).toBe(2)
  })

  it('whoami before init exits 3 naming the fix; an open key file exits 4 naming chmod', async () => {
    const home = join(tempDir(), 'h')
    const none = await runKith(['whoami'], { home })
    expect(none.code).toBe(3)
    expect(none.stderr).toMatch(/run: kith init/)
    await runKith(['init'], { home })
    chmodSync(join(home, 'device.key'), 0o644)
    const open = await runKith(['whoami'], { home })
    expect(open.code).toBe(4)
    expect(open.stderr).toContain(`chmod 600 '${join(home, 'device.key')}'`)
    const hub = await runKith(['hub', '--port', '0'], { home })
    expect(hub.code).toBe(4)
  })

  it('hub add, list and rm keep normalised URLs in the config', async () => {
    const home = join(tempDir(), 'h')
    await runKith(['init'], { home })
    expect((await runKith(['hub', 'add', 'ws://DevBox:7447/'], { home })).stdout).toMatch(
      /added ws:\/\/devbox:7447/,
    )
    expect((await runKith(['hub', 'add', 'ws://devbox:7447'], { home })).stdout).toMatch(
      /already configured/,
    )
    await runKith(['hub', 'add', 'wss://hub.example.net'], { home })
    const list = await runKith(['hub', 'list', '--json'], { home })
    expect(JSON.parse(list.stdout)).toEqual({ hubs: ['ws://devbox:7447', 'wss://hub.example.net'] })
    const who = JSON.parse((await runKith(['whoami', '--json'], { home })).stdout) as {
      hubs: string[]
    }
    expect(who.hubs).toHaveLength(2)
    expect((await runKith(['hub', 'rm', 'ws://devbox:7447'], { home })).code).toBe(0)
    expect((await runKith(['hub', 'list'], { home })).stdout.trim()).toBe('wss://hub.example.net')
    const bad = await runKith(['hub', 'add', 'http://nope'], { home })
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/ws:\/\/ or wss:\/\//)
    expect((await runKith(['hub', 'rm', 'ws://missing:1'], { home })).code).toBe(2)
  })

  it("hub add of the running node's embedded hub is refused: it would turn that hub off", async () => {
    const home = join(tempDir(), 'h')
    await runKith(['init', '--name', 'box'], { home })
    const node = await startNodeProcess(home, ['--port', '0', '--no-web'])
    const embedded = (JSON.parse(await node.waitFor(/"event":"ready"/)) as { embedded: string })
      .embedded
    for (const url of [embedded, embedded.replace('127.0.0.1', 'localhost')]) {
      const r = await runKith(['hub', 'add', url], { home })
      expect(r.code).toBe(1)
      expect(r.stderr).toMatch(/is the hub kith up embeds here.*adding it would turn it off/)
    }
    expect(JSON.parse((await runKith(['hub', 'list', '--json'], { home })).stdout)).toEqual({
      hubs: [],
    })
    await node.stop()
  })
})
