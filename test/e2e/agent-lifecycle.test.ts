import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import type { AgentRow } from '../../src/cli/commands/agent-list.js'
import {
  laptopAndDevbox,
  runKith,
  setupKith,
  startHubProcess,
  startNodeProcess,
  type NodeProcess,
} from '../helpers/cli.js'
import { ask, askForReply, history, threadedUnder } from '../helpers/node-chat.js'
import { init, pairUp } from '../helpers/pair-up.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    // ESRCH: gone.
    return false
  }
}

async function state(home: string, name = 'bot'): Promise<string | null | undefined> {
  const r = await runKith(['agent', 'list', '--json', '--all'], { home })
  return (JSON.parse(r.stdout) as { agents: AgentRow[] }).agents.find((a) => a.name === name)?.state
}

/** Waits until `bot` on `home` runs a turn, and returns its process id. */
async function working(home: string, name = 'bot'): Promise<number> {
  await expect.poll(() => state(home, name), { timeout: 30_000 }).toBe('working')
  return Number(readFileSync(join(home, 'agents', `${name}.pid`), 'utf8'))
}

/** The node is still up: it answers on its control socket, and its process has not exited. */
async function stillUp(node: NodeProcess): Promise<void> {
  expect(node.child.exitCode, node.lines.join('\n')).toBe(null)
  const status = await runKith(['status', '--json'], { home: node.home })
  expect(status.code, status.stderr).toBe(0)
  expect(JSON.parse(status.stdout)).toMatchObject({ running: true })
  expect(node.lines.join('\n')).not.toMatch(/invalid scalar|Unhandled|uncaught/i)
}

async function addBot(home: string, name = 'bot'): Promise<void> {
  const add = await setupKith(['agent', 'add', name, '--', process.execPath, fakeAgent], { home })
  expect(add.code, add.stderr).toBe(0)
}

describe('keys dropped while an agent works (kith up must not crash)', () => {
  it(
    'kith agent revoke mid-turn: the turn and the queued prompt are told, the process stops, the node goes on',
    { timeout: 120_000 },
    async () => {
      const home = join(tempDir(), 'h')
      await init(home, 'box')
      await addBot(home)
      await addBot(home, 'other')
      const node = await startNodeProcess(home, ['--port', '0'])
      const running = await ask(home, '@bot hang')
      const pid = await working(home)
      // In the running turn's thread (its session), so it waits behind that turn.
      const queued = await ask(home, '@bot echo after the hang', 'ops', running)
      const revoke = await runKith(['agent', 'revoke', 'bot', '--yes'], { home })
      expect(revoke.code, revoke.stderr).toBe(0)
      await node.waitFor(/agent bot: its key was revoked; no longer hosted/)
      // Each prompt it had taken gets one visible line (from this device: the agent's key is
      // gone), instead of silence.
      // (The thread holds the queued prompt and its notice too.)
      expect(
        (await threadedUnder(home, running, { count: 3 })).map((i) => i.event.content),
      ).toContain('⚠ bot stopped during this turn: its key was revoked; it will not answer')
      expect((await threadedUnder(home, queued))[0]!.event.content).toBe(
        '⚠ bot will not answer: its key was revoked',
      )
      // The agent process goes with it (no orphan), and the cancelled turn's reply is dropped,
      // not signed with the wiped key.
      await expect.poll(() => alive(pid), { timeout: 15_000 }).toBe(false)
      await node.waitFor(/agent bot: its reply to [0-9a-f]{8} not posted: its key was revoked/)
      await stillUp(node)
      expect(await askForReply(home, '@other echo still hosting')).toBe('still hosting')
      // Only the device's notices: nothing more signed by the revoked agent after them.
      const botKey = (await history(home)).find((i) => i.from.name === 'bot')
      expect(botKey).toBeUndefined()
      expect(await node.stop()).toBe(0)
    },
  )

  it('kith agent set mid-turn changes settings without touching the turn', async () => {
    const home = join(tempDir(), 'h')
    await init(home, 'box')
    await addBot(home)
    const node = await startNodeProcess(home, ['--port', '0', '--cancel-grace', '1'])
    const running = await ask(home, '@bot hang')
    const pid = await working(home)
    const set = await runKith(['agent', 'set', 'bot', '--permissions', 'allow-reads'], { home })
    expect(set.code, set.stderr).toBe(0)
    await node.waitFor(/agent bot: settings updated/)
    expect(alive(pid)).toBe(true)
    expect((await runKith(['cancel', '#ops', 'bot'], { home })).code).toBe(0)
    expect((await threadedUnder(home, running))[0]!.event.content).toBe('⏹ bot: turn cancelled')
    expect(await askForReply(home, '@bot echo after set')).toBe('after set')
    await stillUp(node)
  }, 90_000)

  it(
    'kith device revoke of the hosting machine mid-turn: its node stops its agents and stays up',
    { timeout: 150_000 },
    async () => {
      const { laptop, devbox } = await laptopAndDevbox(tempDir())
      await addBot(devbox)
      const nd = await startNodeProcess(devbox)
      const nl = await startNodeProcess(laptop)
      await nd.waitFor(/linked to/)
      await nl.waitFor(/linked to/)
      await ask(laptop, '@bot hang')
      const pid = await working(devbox)
      const revoke = await runKith(['device', 'revoke', 'devbox', '--yes'], { home: laptop })
      expect(revoke.code, revoke.stderr).toBe(0)
      await nd.waitFor(/This device was removed from the fleet/, 60_000)
      await nd.waitFor(/agent bot: this device was removed from the fleet; no longer hosted/)
      await expect.poll(() => alive(pid), { timeout: 15_000 }).toBe(false)
      await stillUp(nd)
      expect(await nd.stop()).toBe(0)
      // The laptop's list no longer shows the revoked devbox, unless asked (--all).
      const list = (all: string[]) =>
        runKith(['device', 'list', '--json', '--offline', ...all], { home: laptop }).then(
          (r) =>
            JSON.parse(r.stdout) as { devices: { name: string; status: string }[]; hidden: number },
        )
      const shown = await list([])
      expect(shown.hidden).toBe(1)
      expect(shown.devices.map((d) => d.name)).not.toContain('devbox')
      expect((await list(['--all'])).devices).toContainEqual(
        expect.objectContaining({ name: 'devbox', status: 'revoked' }),
      )
    },
  )

  it(
    'kith fleet remove of the person whose machine hosts the agent, mid-turn',
    { timeout: 200_000 },
    async () => {
      const dir = tempDir()
      const [alice, bob] = [join(dir, 'alice'), join(dir, 'bob')]
      await init(alice, 'alice-laptop')
      const hub = await startHubProcess(['--db', join(dir, 'hub.db')], alice)
      await setupKith(['hub', 'add', hub.url], { home: alice })
      await init(bob, 'bob-laptop')
      await pairUp(alice, ['fleet', 'invite', '--name', 'bob'], bob, ['fleet', 'join'])
      await addBot(bob)
      const nb = await startNodeProcess(bob)
      await nb.waitFor(/linked to/)
      await ask(bob, '@bot hang')
      const pid = await working(bob)
      const remove = await runKith(['fleet', 'remove', 'bob', '--yes'], { home: alice })
      expect(remove.code, remove.stderr).toBe(0)
      await nb.waitFor(/agent bot: (its key was revoked|this device was removed)/, 60_000)
      await expect.poll(() => alive(pid), { timeout: 15_000 }).toBe(false)
      await stillUp(nb)
      expect(await nb.stop()).toBe(0)
    },
  )
})
