import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import type { FleetAgentRow } from '../../src/cli/commands/agent-list.js'
import type { DeviceStatus } from '../../src/node/node-status.js'
import { laptopAndDevbox, runKith, setupKith, startNodeProcess } from '../helpers/cli.js'
import { ask, threadedUnder } from '../helpers/node-chat.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

async function devices(home: string): Promise<DeviceStatus[]> {
  const r = await runKith(['status', '--json'], { home })
  return (JSON.parse(r.stdout) as { devices: DeviceStatus[] }).devices
}

async function fleetAgent(home: string, name = 'bot'): Promise<FleetAgentRow | undefined> {
  const r = await runKith(['agent', 'list', '--fleet', '--json'], { home })
  return (JSON.parse(r.stdout) as { agents: FleetAgentRow[] }).agents.find((a) => a.name === name)
}

describe('presence: who is up, and what their agents are doing', { timeout: 180_000 }, () => {
  it('the laptop sees the devbox online with its agent idle, working, awaiting permission, then offline', async () => {
    const { laptop, devbox } = await laptopAndDevbox(tempDir())
    const add = await setupKith(['agent', 'add', 'bot', '--', process.execPath, fakeAgent], {
      home: devbox,
    })
    expect(add.code, add.stderr).toBe(0)
    const nl = await startNodeProcess(laptop)
    await nl.waitFor(/linked to/)
    const nd = await startNodeProcess(devbox, ['--cancel-grace', '1'])
    await nd.waitFor(/linked to/)

    // Heard at once (the devbox's first presence, and the laptop answers a newcomer with its own).
    await expect
      .poll(async () => (await devices(laptop)).find((d) => d.name === 'devbox'), {
        timeout: 30_000,
      })
      .toMatchObject({ presence: 'online', agents: [{ name: 'bot', state: 'idle' }] })
    await expect
      .poll(async () => (await devices(devbox)).find((d) => d.name === 'laptop')?.presence, {
        timeout: 30_000,
      })
      .toBe('online')
    expect((await runKith(['status'], { home: laptop })).stdout).toMatch(
      /devbox\s+online \(heard \d+ s ago\); agents: bot idle/,
    )

    const q = await ask(laptop, '@bot hang')
    await expect
      .poll(() => fleetAgent(laptop), { timeout: 30_000 })
      .toMatchObject({ host: 'devbox', state: 'working' })
    expect((await runKith(['agent', 'list', '--fleet'], { home: laptop })).stdout).toMatch(
      /^bot\s+working on devbox$/m,
    )
    expect((await runKith(['cancel', '#ops', 'bot'], { home: laptop })).code).toBe(0)
    expect((await threadedUnder(laptop, q))[0]!.event.content).toBe('⏹ bot: turn cancelled')
    // Idle again, as the devbox reports it.
    await expect
      .poll(() => fleetAgent(laptop), { timeout: 30_000 })
      .toMatchObject({ state: 'idle' })

    await ask(laptop, '@bot permission deploy')
    await expect
      .poll(() => fleetAgent(laptop), { timeout: 30_000 })
      .toMatchObject({ state: 'awaiting-permission' })

    // A devbox that stops says so: offline at once, its agent no longer reported.
    expect(await nd.stop()).toBe(0)
    await expect
      .poll(async () => (await devices(laptop)).find((d) => d.name === 'devbox')?.presence, {
        timeout: 30_000,
      })
      .toBe('offline')
    expect(await fleetAgent(laptop)).toMatchObject({ host: null, state: 'not reported' })
    expect((await runKith(['status'], { home: laptop })).stdout).toMatch(
      /devbox\s+offline \(last heard \d+ s ago\)/,
    )
  })
})
