import { join } from 'node:path'
import Database from 'better-sqlite3'
import { bytesToHex } from '@noble/hashes/utils.js'
import { generateSecretKey } from 'nostr-tools/pure'
import { describe, expect, it } from 'vitest'
import type { Epoch } from '../../src/events/e2e-epoch.js'
import { openEnvelope, parseEnvelopeHead } from '../../src/events/e2e-envelope.js'
import { isSealed, openSealed } from '../../src/events/e2e-seal.js'
import type { NostrEvent } from '../../src/events/event.js'
import { loadIdentity } from '../../src/identity/keys.js'
import { NodeStore } from '../../src/store/node-store.js'
import { runKith, setupKith, startHubProcess, startNodeProcess } from '../helpers/cli.js'
import { ask, history } from '../helpers/node-chat.js'
import { tempDir } from '../helpers/tmp.js'

/** Waits until the node in `home` shows a message of this text in #ops. */
async function sees(home: string, text: string): Promise<void> {
  await expect
    .poll(async () => (await history(home)).map((i) => i.event.content), { timeout: 30_000 })
    .toContain(text)
}

async function machine(dir: string, name: string, owner: string, hub: string): Promise<string> {
  const home = join(dir, name)
  const init = await setupKith(['init', '--name', name, '--owner-key-stdin'], {
    home,
    input: owner,
  })
  expect(init.code, init.stderr).toBe(0)
  expect((await setupKith(['hub', 'add', hub], { home })).code).toBe(0)
  return home
}

describe('kith-e2e/1 keys follow membership (real processes)', { timeout: 150_000 }, () => {
  it('a new device reads its person’s history; a revoked one reads nothing sent after the rotation', async () => {
    const dir = tempDir()
    const owner = bytesToHex(generateSecretKey())
    const hubHome = join(dir, 'hubhome')
    await setupKith(['init', '--owner-key-stdin'], { home: hubHome, input: owner })
    const hub = await startHubProcess(['--db', join(dir, 'hub.db')], hubHome)
    const laptop = await machine(dir, 'laptop', owner, hub.url)
    const devbox = await machine(dir, 'devbox', owner, hub.url)
    expect((await runKith(['fleet', 'encrypt', 'on'], { home: laptop })).code).toBe(0)
    const nl = await startNodeProcess(laptop)
    const nd = await startNodeProcess(devbox)
    await nl.waitFor(/linked to/)
    await nd.waitFor(/linked to/)
    await expect
      .poll(async () => (await runKith(['fleet', 'encrypt', '--json'], { home: devbox })).stdout, {
        timeout: 20_000,
      })
      .toMatch(/"encrypt": true/)
    // The running node says so too.
    const status = await runKith(['status', '--json'], { home: laptop })
    expect(JSON.parse(status.stdout)).toMatchObject({ running: true, encrypt: true })
    await ask(laptop, 'before walrus')
    await sees(devbox, 'before walrus')

    // A device paired later catches up sealed history and gets its keys from the laptop.
    const phone = await machine(dir, 'phone', owner, hub.url)
    const np = await startNodeProcess(phone)
    await np.waitFor(/linked to/)
    await sees(phone, 'before walrus')
    await ask(phone, 'from-phone heron')
    await sees(laptop, 'from-phone heron')

    // Revoked: the next sender rotates; what follows is sealed under a key the phone never gets.
    const revoked = await runKith(['device', 'revoke', 'phone', '--yes'], { home: laptop })
    expect(revoked.code, revoked.stderr).toBe(0)
    await ask(laptop, 'after mantis')
    await nl.waitFor(/#ops: new epoch 1/)
    await sees(devbox, 'after mantis')
    await ask(devbox, 'after bison')
    await sees(laptop, 'after bison')

    await np.stop()
    await nl.stop()
    await nd.stop()
    await hub.stop()

    // The phone is handed every event the hub holds, with every key it ever had.
    const hubDb = new Database(join(dir, 'hub.db'), { readonly: true })
    const all = (
      hubDb.prepare('SELECT raw FROM events WHERE kind IN (9, 4145)').all() as { raw: string }[]
    ).map((r) => JSON.parse(r.raw) as NostrEvent)
    hubDb.close()
    const phoneId = loadIdentity(phone)
    const keys = new Map<string, Epoch>()
    const phoneDb = new NodeStore(phone)
    for (const e of phoneDb.e2e.epochsOf('ops')) keys.set(e.id, e)
    phoneDb.close()
    for (const e of all.filter((x) => x.kind === 4145)) {
      if (parseEnvelopeHead(e).recipient !== phoneId.devicePubkey) continue
      const epoch = openEnvelope(e, phoneId.deviceSecret)
      keys.set(epoch.id, epoch)
    }
    expect([...keys.values()].map((k) => k.number)).toEqual([0])
    // #ops's (the nodes' stops add a sentinel of their own channel: test/helpers/sentinel.ts).
    const sealed = all.filter(
      (e) => e.kind === 9 && e.tags.some((t) => t[0] === 'h' && t[1] === 'ops'),
    )
    expect(sealed.length).toBe(4)
    expect(sealed.every(isSealed)).toBe(true)
    const readable: string[] = []
    let refused = 0
    for (const e of sealed) {
      try {
        readable.push(openSealed(e, (id) => keys.get(id)).content)
      } catch (err) {
        expect((err as { reason?: string }).reason).toBe('no-key')
        refused++
      }
    }
    expect(readable.sort()).toEqual(['before walrus', 'from-phone heron'])
    expect(refused).toBe(2)
  })
})
