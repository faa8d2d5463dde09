// A host that goes away mid-turn: the other devices know (presence, kind 24141) and say so,
// rather than counting a turn that can never end.
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { laptopAndDevbox, runKith, setupKith, spawnKith, startNodeProcess } from '../helpers/cli.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

describe('a host gone mid-turn (real hub, two nodes, kith chat)', { timeout: 180_000 }, () => {
  it('kith chat says the host went offline, stops counting, and ends the turn of a revoked agent', async () => {
    const { laptop, devbox } = await laptopAndDevbox(join(tempDir(), 'f'))
    const added = await setupKith(['agent', 'add', 'claude', '--', process.execPath, fakeAgent], {
      home: devbox,
    })
    expect(added.code, added.stderr).toBe(0)
    // The devbox says it is up every second: silent for 2.5 s, it counts as gone.
    const nd = await startNodeProcess(devbox, ['--no-web', '--presence-interval', '1'])
    const nl = await startNodeProcess(laptop, ['--no-web'])
    await nd.waitFor(/linked to/)
    await nl.waitFor(/linked to/)
    const chat = spawnKith(['chat', '#ops'], laptop)
    await chat.waitFor(/── #ops ──/)
    chat.write('@claude hang\n')
    await chat.waitFor(/⋯ claude is working on it…/, 30_000)
    // The devbox dies as a machine does (power, OOM): no offline presence, nothing more.
    await nd.stop('SIGKILL')
    await chat.waitFor(
      /⚠ claude's host devbox went offline: its turn cannot finish until that machine is back/,
      30_000,
    )
    // The agent is removed meanwhile: its turn is over, whatever its host would have said.
    const list = await runKith(['agent', 'list', '--json'], { home: devbox })
    const { agents } = JSON.parse(list.stdout) as { agents: { name: string; npub: string }[] }
    const npub = agents.find((a) => a.name === 'claude')!.npub
    const revoked = await runKith(['revoke', npub, '--yes'], { home: laptop })
    expect(revoked.code, revoked.stderr).toBe(0)
    await chat.waitFor(/✗ claude was removed from the fleet: its turn is over/, 30_000)
    chat.write('/quit\n')
    expect(await chat.exit).toBe(0)
    await nl.stop()
  })
})
