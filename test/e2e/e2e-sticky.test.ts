import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  laptopAndDevbox,
  runKith,
  setupKith,
  startHubProcess,
  startNodeProcess,
} from '../helpers/cli.js'
import { ask, history } from '../helpers/node-chat.js'
import { pairUp } from '../helpers/pair-up.js'
import { tempDir } from '../helpers/tmp.js'

/** The raw bytes of an sqlite database with its WAL, as an operator reading the disk has them. */
function rawDb(path: string): string {
  return [path, `${path}-wal`]
    .filter((p) => existsSync(p))
    .map((p) => readFileSync(p).toString('latin1'))
    .join('\n')
}

async function encrypts(home: string): Promise<boolean> {
  const r = await runKith(['fleet', 'encrypt', '--json'], { home })
  expect(r.code, r.stderr).toBe(0)
  return (JSON.parse(r.stdout) as { encrypt: boolean }).encrypt
}

describe(
  'sealing is sticky (kith-e2e/1, Turning it on; real processes)',
  { timeout: 180_000 },
  () => {
    it('attacker: removing the admin who turned sealing on leaves the fleet sealed', async () => {
      const dir = tempDir()
      const [alice, bob] = ['alice', 'bob'].map((n) => join(dir, n)) as [string, string]
      for (const [home, name] of [
        [alice, 'alice-laptop'],
        [bob, 'bob-laptop'],
      ] as const) {
        const r = await setupKith(['init', '--name', name, '--plain'], { home })
        expect(r.code, r.stderr).toBe(0)
      }
      const hub = await startHubProcess(['--db', join(dir, 'hub.db')], alice)
      await setupKith(['hub', 'add', hub.url], { home: alice })
      await pairUp(alice, ['fleet', 'invite', '--admin', '--name', 'bob'], bob, ['fleet', 'join'])
      const na = await startNodeProcess(alice)
      const nb = await startNodeProcess(bob)
      await na.waitFor(/linked to/)
      await nb.waitFor(/linked to/)
      expect(await encrypts(alice)).toBe(false)

      // Bob, an admin, turns sealing on; Alice's node learns it.
      const on = await runKith(['fleet', 'encrypt', 'on'], { home: bob })
      expect(on.code, on.stderr).toBe(0)
      await expect.poll(() => encrypts(alice), { timeout: 30_000 }).toBe(true)

      // Alice removes Bob: his "on" was signed while he was an admin, so it still counts; and
      // "on" is signed again at the removal, so an "off" Bob back-dates cannot undo it.
      const removed = await runKith(['fleet', 'remove', 'bob', '--yes'], { home: alice })
      expect(removed.code, removed.stderr).toBe(0)
      expect(removed.stdout).toMatch(/re-signed the fleet setting "sealed"/)
      expect(await encrypts(alice)).toBe(true)
      const status = JSON.parse((await runKith(['status', '--json'], { home: alice })).stdout) as {
        encrypt: boolean
        sealLapse: string | null
      }
      expect(status).toMatchObject({ encrypt: true, sealLapse: null })

      // A fresh start judges the settings anew (a running node may still hold its decision).
      await na.stop()
      const na2 = await startNodeProcess(alice)
      await na2.waitFor(/linked to/)
      await ask(alice, 'after-removal-sentinel-okapi')
      await expect
        .poll(async () => (await history(alice)).map((i) => i.event.content), { timeout: 20_000 })
        .toContain('after-removal-sentinel-okapi')
      await nb.stop()
      await na.stop()
      await hub.stop()
      const raw = rawDb(join(dir, 'hub.db'))
      expect(raw).toContain('"e2e"')
      expect(raw.includes('sentinel-okapi'), 'hub.db holds the message after the removal').toBe(
        false,
      )
    })

    it('attacker: a fleet founded with an imported owner key is sealed once its founder caught up', async () => {
      const dir = tempDir()
      // Both machines were set up with --owner-key-stdin: no setting was signed by init.
      const { hub, laptop, devbox } = await laptopAndDevbox(dir)
      const nl = await startNodeProcess(laptop)
      const nd = await startNodeProcess(devbox)
      await nl.waitFor(/no encryption setting: signed/)
      await expect.poll(() => encrypts(devbox), { timeout: 30_000 }).toBe(true)
      await ask(laptop, 'imported-sentinel-quokka')
      await expect
        .poll(async () => (await history(devbox)).map((i) => i.event.content), { timeout: 30_000 })
        .toContain('imported-sentinel-quokka')
      await ask(devbox, 'imported-reply-sentinel-tapir')
      await expect
        .poll(async () => (await history(laptop)).map((i) => i.event.content), { timeout: 30_000 })
        .toContain('imported-reply-sentinel-tapir')
      await nd.stop()
      await nl.stop()
      await hub.stop()
      const raw = rawDb(join(dir, 'hub.db'))
      expect(raw).toContain('"e2e"')
      for (const s of ['sentinel-quokka', 'sentinel-tapir'])
        expect(raw.includes(s), `hub.db holds "${s}"`).toBe(false)
    })
  },
)
