import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { freePort, setupKith, startHubProcess, startNodeProcess } from '../helpers/cli.js'
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

describe(
  'the setting travels in the enrollment (kith-e2e/1, real processes)',
  { timeout: 180_000 },
  () => {
    it('attacker: a hub that withholds the setting (kind 34145) from a newly paired device still gets only ciphertext', async () => {
      const dir = tempDir()
      const laptop = join(dir, 'laptop')
      const phone = join(dir, 'phone')
      const db = join(dir, 'hub.db')
      const port = await freePort()
      const url = `ws://127.0.0.1:${port}`
      // A sealed fleet: kith init signs "on", and the laptop's node takes it to the hub.
      expect((await setupKith(['init', '--name', 'laptop'], { home: laptop })).code).toBe(0)
      let hub = await startHubProcess(['--db', db, '--port', String(port)], laptop)
      expect((await setupKith(['hub', 'add', url], { home: laptop })).code).toBe(0)
      const nl = await startNodeProcess(laptop)
      await nl.waitFor(/caught up with/)
      const settingsOnHub = () => {
        const d = new Database(db, { readonly: true })
        try {
          return (
            d.prepare('SELECT count(*) AS n FROM events WHERE kind = 34145').get() as { n: number }
          ).n
        } finally {
          d.close()
        }
      }
      await expect.poll(settingsOnHub, { timeout: 20_000 }).toBe(1)

      // The operator withholds it: the setting is gone from the hub before the phone pairs.
      await hub.stop()
      const d = new Database(db)
      d.exec('DELETE FROM tags WHERE seq IN (SELECT seq FROM events WHERE kind = 34145)')
      d.exec('DELETE FROM events WHERE kind = 34145')
      d.exec('DELETE FROM kept_versions WHERE kind = 34145')
      d.close()
      expect(settingsOnHub()).toBe(0)
      hub = await startHubProcess(['--db', db, '--port', String(port)], laptop)

      await pairUp(laptop, ['pair', '--name', 'phone'], phone, ['join'])
      const np = await startNodeProcess(phone)
      await np.waitFor(/caught up with/)
      await ask(phone, 'withheld-sentinel-pangolin')
      await expect
        .poll(async () => (await history(laptop)).map((i) => i.event.content), { timeout: 30_000 })
        .toContain('withheld-sentinel-pangolin')
      await np.stop()
      await nl.stop()
      await hub.stop()
      const raw = rawDb(db)
      expect(raw).toContain('"e2e"')
      expect(raw.includes('sentinel-pangolin'), "hub.db holds the phone's message").toBe(false)
    })
  },
)
