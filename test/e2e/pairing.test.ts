import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runKith, spawnKith, startHubProcess, startNodeProcess } from '../helpers/cli.js'
import { tempDir } from '../helpers/tmp.js'

const sasLine = /do not type it anywhere:\s+(\d{3} \d{3})/
const codePattern = /kith join (kith-pair1:[A-Za-z0-9_-]+)/

/** A laptop (owner key) with a hub; returns what a pairing needs. */
async function laptopWithHub() {
  const dir = tempDir()
  const laptop = join(dir, 'laptop')
  expect((await runKith(['init', '--name', 'laptop'], { home: laptop })).code).toBe(0)
  const hub = await startHubProcess(['--db', join(dir, 'hub.db')], laptop)
  await runKith(['hub', 'add', hub.url], { home: laptop })
  return { dir, laptop, hub }
}

describe(
  'kith pair / kith join (real processes, answers typed on stdin)',
  { timeout: 60_000 },
  () => {
    it('enrolls a new machine: same 6 digits on both screens, a grant, and its node is accepted', async () => {
      const { dir, laptop, hub } = await laptopWithHub()
      const pair = spawnKith(['pair', '--name', 'devbox'], laptop)
      const code = (await pair.waitFor(codePattern))[1]!
      const devbox = join(dir, 'devbox')
      const joiner = spawnKith(['join', code], devbox)
      await joiner.waitFor(
        /Join the fleet of laptop \(npub1\w+\)\s+via the hub ws:\/\/127\.0\.0\.1:\d+, as a device\?/,
      )
      joiner.write('y\n')
      const sasJ = (await joiner.waitFor(sasLine))[1]
      const sasI = (await pair.waitFor(sasLine))[1]
      expect(sasJ).toBe(sasI)
      joiner.write('y\n')
      pair.write('y\n')
      expect(await pair.exit).toBe(0)
      expect(await joiner.exit).toBe(0)
      expect(pair.output()).toMatch(/paired: devbox npub1\w+ is now a device of this fleet/)
      expect(joiner.output()).toMatch(/start this node with: kith up/)
      // The new machine has no owner key, a device grant from the owner, and the fleet's hub.
      const who = JSON.parse(
        (await runKith(['whoami', '--json'], { home: devbox })).stdout,
      ) as Record<string, unknown>
      expect(who).toMatchObject({ ownerKeyHere: false, hubs: [hub.url] })
      const devices = JSON.parse(
        (await runKith(['device', 'list', '--json'], { home: laptop })).stdout,
      ) as {
        devices: { name: string; status: string }[]
      }
      expect(devices.devices.map((d) => [d.name, d.status]).sort()).toEqual([
        ['devbox', 'active'],
        ['laptop', 'active'],
      ])
      // kith up on it just works, and the hub accepts what it posts.
      const node = await startNodeProcess(devbox)
      await node.waitFor(/linked to/)
      const sent = JSON.parse(
        (await runKith(['send', '#ops', 'hello from the devbox', '--json'], { home: devbox }))
          .stdout,
      ) as {
        delivery: { ok: boolean }
      }
      expect(sent.delivery.ok).toBe(true)
      // The code is single use.
      const again = await runKith(['join', code, '--yes'], { home: join(dir, 'other') })
      expect(again.code).toBe(1)
      expect(again.stderr).toMatch(/This code was already used; make a new one\./)
    })

    it('shows the same words on both sides when one person says no, and shares nothing', async () => {
      const { dir, laptop } = await laptopWithHub()
      const pair = spawnKith(['pair'], laptop)
      const code = (await pair.waitFor(codePattern))[1]!
      const devbox = join(dir, 'devbox')
      const joiner = spawnKith(['join', code, '--yes'], devbox)
      await joiner.waitFor(sasLine)
      await pair.waitFor(sasLine)
      joiner.write('n\n')
      pair.write('y\n')
      expect(await joiner.exit).toBe(1)
      expect(await pair.exit).toBe(1)
      const words =
        'Pairing cancelled: the codes were not confirmed on both screens. Nothing was shared.'
      expect(joiner.output()).toContain(words)
      expect(pair.output()).toContain(words)
      const devices = JSON.parse(
        (await runKith(['device', 'list', '--json', '--offline'], { home: laptop })).stdout,
      ) as {
        devices: unknown[]
      }
      expect(devices.devices).toHaveLength(1)
      expect((await runKith(['whoami'], { home: devbox })).code).toBe(3)
    })

    it('cancels for safety when a third device tries the same code', async () => {
      const { dir, laptop } = await laptopWithHub()
      const pair = spawnKith(['pair'], laptop)
      const code = (await pair.waitFor(codePattern))[1]!
      const first = spawnKith(['join', code, '--yes'], join(dir, 'a'))
      await first.waitFor(sasLine)
      const second = spawnKith(['join', code, '--yes'], join(dir, 'b'))
      const words = 'Another device tried to use this code; cancelled for safety.'
      expect(await second.exit).toBe(1)
      expect(second.output()).toContain(words)
      pair.write('y\n')
      first.write('y\n')
      expect(await pair.exit).toBe(1)
      expect(await first.exit).toBe(1)
      expect(pair.output()).toContain(words)
      expect(first.output()).toContain(words)
    })

    it('locks after 3 failures in 15 minutes, says why, and re-arms', async () => {
      const { dir, laptop } = await laptopWithHub()
      for (let i = 0; i < 3; i++) {
        const pair = spawnKith(['pair'], laptop)
        const code = (await pair.waitFor(codePattern))[1]!
        const joiner = spawnKith(['join', code, '--yes'], join(dir, `j${i}`))
        await joiner.waitFor(sasLine)
        joiner.write('n\n')
        pair.write('n\n')
        expect(await pair.exit).toBe(1)
      }
      const locked = await runKith(['pair'], { home: laptop })
      expect(locked.code).toBe(1)
      expect(locked.stderr).toMatch(
        /locked after 3 failed attempts in 15 minutes; re-arm it with kith pair --rearm/,
      )
      expect((await runKith(['pair', '--rearm'], { home: laptop })).stdout).toMatch(/re-armed/)
      const pair = spawnKith(['pair'], laptop)
      await pair.waitFor(codePattern)
      pair.child.kill('SIGTERM')
    })

    it('reads the code from stdin with kith join -, for pasting over SSH', async () => {
      const { dir, laptop } = await laptopWithHub()
      const pair = spawnKith(['pair'], laptop)
      const code = (await pair.waitFor(codePattern))[1]!
      const joiner = spawnKith(['join', '-', '--name', 'devbox'], join(dir, 'devbox'))
      joiner.write(`${code}\ny\n`)
      await joiner.waitFor(sasLine)
      await pair.waitFor(sasLine)
      joiner.write('y\n')
      pair.write('y\n')
      expect(await joiner.exit).toBe(0)
      expect(await pair.exit).toBe(0)
      expect(pair.output()).toMatch(/paired: devbox npub1/)
    })

    it('refuses a garbled code and a machine that already holds an owner key', async () => {
      const { dir, laptop } = await laptopWithHub()
      const bad = await runKith(['join', 'kith-pair1:AAAA', '--yes'], { home: join(dir, 'x') })
      expect(bad.code).toBe(1)
      expect(bad.stderr).toMatch(/not a kith pairing code/)
      const pair = spawnKith(['pair'], laptop)
      const code = (await pair.waitFor(codePattern))[1]!
      const owner = join(dir, 'owner2')
      await runKith(['init'], { home: owner })
      const r = await runKith(['join', code, '--yes'], { home: owner })
      expect(r.code).toBe(1)
      expect(r.stderr).toMatch(/already belongs to a fleet/)
      pair.child.kill('SIGTERM')
    })
  },
)
