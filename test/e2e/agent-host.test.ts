import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import type { AgentRow } from '../../src/cli/commands/agent-list.js'
import { runKith, setupKith, startNodeProcess } from '../helpers/cli.js'
import { ask, askForReply, history, threadedUnder } from '../helpers/node-chat.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

async function listed(home: string): Promise<AgentRow> {
  const r = await runKith(['agent', 'list', '--json'], { home })
  expect(r.code, r.stderr).toBe(0)
  return (JSON.parse(r.stdout) as { agents: AgentRow[] }).agents[0]!
}

/** A fresh machine (KITH_HOME) with the fake agent `bot` added with these flags. */
async function boxWithBot(addFlags: string[] = [], agentFlags: string[] = []): Promise<string> {
  const home = join(tempDir(), 'h')
  await setupKith(['init', '--name', 'box'], { home })
  const add = await runKith(
    ['agent', 'add', 'bot', ...addFlags, '--', process.execPath, fakeAgent, ...agentFlags],
    { home },
  )
  expect(add.code, add.stderr).toBe(0)
  return home
}

describe('agent host behaviours through a real node (kith up, fake ACP agent)', () => {
  it(
    'pins the mode, keeps it across a restart, auto-allows reads, and lists it all',
    {
      timeout: 120_000,
    },
    async () => {
      const home = await boxWithBot(['--permissions', 'allow-reads'], ['--modes', '--model-option'])
      let node = await startNodeProcess(home, ['--port', '0'])
      const first = await ask(home, '@bot mode')
      expect((await threadedUnder(home, first))[0]!.event.content).toBe(
        'mode: default, model: fake-large',
      )
      // A read runs at once (no 4142 card), and the node says so.
      expect(await askForReply(home, '@bot permission-read src/index.ts')).toBe(
        'permission: selected allow',
      )
      await node.waitFor(
        /auto-allowed read .*src\/index\.ts.* in #ops \(thread \w+\) \(permissions: allow-reads\)/,
      )
      expect((await history(home)).filter((i) => i.event.kind === 4142)).toEqual([])
      expect(await listed(home)).toMatchObject({
        permissions: 'allow-reads',
        state: 'idle',
        adapter: { name: 'kith-fake-agent', version: '1.0.0' },
        queue: 0,
        // Each top-level prompt started a thread, and each thread is a session.
        sessions: 2,
      })
      expect(await node.stop()).toBe(0)
      expect(await listed(home)).toMatchObject({ state: 'not running', sessions: 2 })

      // Restarted: a reply in the first thread resumes its session, and its mode and model are
      // set again (the agent forgot).
      node = await startNodeProcess(home, ['--port', '0'])
      expect(await askForReply(home, '@bot mode', first)).toBe('mode: default, model: fake-large')
      await node.waitFor(/resumed session fake-1 for #ops \(thread /)
      const code = await node.stop()
      expect(code, node.lines.join('\n')).toBe(0)
    },
  )
})

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    // ESRCH: gone.
    return false
  }
}

describe('agent processes', () => {
  it(
    'stops the tools an agent started with it, and a leftover agent on the next kith up',
    { timeout: 120_000 },
    async () => {
      const home = await boxWithBot(['--env', 'AGENT_TEST_TOKEN'], ['--linger'])
      const refused = await setupKith(['agent', 'add', 'x', '--env', 'KITH_HOME', '--', 'true'], {
        home,
      })
      expect(refused.code).toBe(2)
      expect(refused.stderr).toMatch(/KITH_HOME is Kith's own and never reaches an agent/)

      // A variable named with --env reaches the agent; nothing else of the node's does.
      let node = await startNodeProcess(home, ['--port', '0'], { AGENT_TEST_TOKEN: 'x' })
      expect((await askForReply(home, '@bot env')).split(',')).toContain('AGENT_TEST_TOKEN')

      // A normal stop takes the agent's tool processes with it.
      const tool = Number(/^child (\d+)$/.exec(await askForReply(home, '@bot child'))![1])
      expect(alive(tool)).toBe(true)
      expect(await node.stop()).toBe(0)
      await expect.poll(() => alive(tool), { timeout: 10_000 }).toBe(false)

      // A node killed outright leaves its agent running (this one ignores stdin closing, as
      // codex-acp does); the next kith up stops it before starting a new one.
      node = await startNodeProcess(home, ['--port', '0'])
      expect(await askForReply(home, '@bot echo up')).toBe('up')
      const pid = Number(readFileSync(join(home, 'agents', 'bot.pid'), 'utf8'))
      await node.stop('SIGKILL')
      expect(alive(pid)).toBe(true)
      node = await startNodeProcess(home, ['--port', '0'])
      await node.waitFor(
        new RegExp(`stopped its process left from an earlier run \\(pid ${pid}\\)`),
      )
      await expect.poll(() => alive(pid), { timeout: 10_000 }).toBe(false)
      expect(await askForReply(home, '@bot echo again')).toBe('again')
      expect(await node.stop()).toBe(0)
    },
  )
})

describe('interrupting a turn', () => {
  it(
    'stops the running turn and runs the interrupting prompt before those queued',
    { timeout: 90_000 },
    async () => {
      const home = await boxWithBot()
      const node = await startNodeProcess(home, ['--port', '0', '--cancel-grace', '1'])
      const long = await ask(home, '@bot hang')
      await expect.poll(async () => (await listed(home)).state, { timeout: 20_000 }).toBe('working')
      // Queued behind it in its thread: another turn that runs until cancelled. Had it run
      // before the interrupting prompt, that prompt would get no answer until this one is
      // cancelled.
      const queued = await ask(home, '@bot hang', 'ops', long)
      const sent = await runKith(['send', '#ops', '@bot echo right now', '--interrupt', '--json'], {
        home,
      })
      expect(sent.code, sent.stderr).toBe(0)
      const urgent = (JSON.parse(sent.stdout) as { id: string }).id
      await node.waitFor(/interrupting bot's turn in #ops/)
      // Under it: the prompt queued in its thread, and its end.
      expect((await threadedUnder(home, long, { count: 2 })).map((i) => i.event.content)).toContain(
        '⏹ bot: turn cancelled',
      )
      expect((await threadedUnder(home, urgent))[0]!.event.content).toBe('right now')
      const answered = (await history(home)).filter((i) =>
        i.event.tags.some((t) => t[0] === 'e' && t[1] === queued),
      )
      expect(answered).toEqual([])
      expect((await runKith(['cancel', '#ops'], { home })).code).toBe(0)
      expect((await threadedUnder(home, queued))[0]!.event.content).toBe('⏹ bot: turn cancelled')
    },
  )
})

describe('a node stopping mid-turn', () => {
  it(
    'answers every prompt it had taken after its restart: queued ones run, running ones get a notice',
    { timeout: 120_000 },
    async () => {
      const home = await boxWithBot()
      for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
        let node = await startNodeProcess(home, ['--port', '0'])
        const running = await ask(home, '@bot hang')
        await expect
          .poll(async () => (await listed(home)).state, { timeout: 20_000 })
          .toBe('working')
        // In the running turn's thread (its session), so it waits behind that turn.
        const queued = await ask(home, `@bot echo queued across a ${signal}`, 'ops', running)
        await node.stop(signal)
        node = await startNodeProcess(home, ['--port', '0'])
        expect((await threadedUnder(home, queued))[0]!.event.content).toBe(
          `queued across a ${signal}`,
        )
        // The thread holds the queued prompt and its answer too: the notices are the ⚠ lines.
        const notices = await threadedUnder(home, running, { count: 3 })
        expect(notices.map((n) => n.event.content).filter((c) => c.startsWith('⚠'))).toEqual([
          '⚠ bot did not answer: its host box stopped during the turn; ask again if it is still needed',
        ])
        expect(await node.stop()).toBe(0)
      }
    },
  )

  it(
    'reports the session of a turn it cut short idle after its restart, not working for ever',
    { timeout: 90_000 },
    async () => {
      const home = await boxWithBot()
      let node = await startNodeProcess(home, ['--port', '0'])
      const running = await ask(home, '@bot hang')
      const sessionOf = async () => {
        const r = await runKith(['session', 'list', '--json'], { home })
        expect(r.code, r.stderr).toBe(0)
        const { sessions } = JSON.parse(r.stdout) as {
          sessions: { thread?: string; status: string }[]
        }
        return sessions.find((s) => s.thread === running)?.status
      }
      await expect.poll(sessionOf, { timeout: 20_000 }).toBe('working')
      await node.stop('SIGTERM')
      node = await startNodeProcess(home, ['--port', '0'])
      expect((await threadedUnder(home, running))[0]!.event.content).toMatch(
        /^⚠ bot did not answer: its host box stopped/,
      )
      await expect.poll(sessionOf, { timeout: 20_000 }).toBe('idle')
      expect(await node.stop()).toBe(0)
    },
  )
})

describe('agents added and revoked while the node runs', () => {
  it('hosts a new agent at once and stops hosting a revoked one', { timeout: 90_000 }, async () => {
    const home = join(tempDir(), 'h')
    await setupKith(['init', '--name', 'box'], { home })
    const node = await startNodeProcess(home, ['--port', '0'])
    const add = await setupKith(['agent', 'add', 'late', '--', process.execPath, fakeAgent], {
      home,
    })
    expect(add.code, add.stderr).toBe(0)
    expect(add.stdout).toMatch(/the running node hosts it now; prompt it with @late/)
    expect(await askForReply(home, '@late echo no restart needed')).toBe('no restart needed')
    expect((await runKith(['agent', 'revoke', 'late', '--yes'], { home })).code).toBe(0)
    await node.waitFor(/agent late: its key was revoked; no longer hosted/)
    const status = JSON.parse((await runKith(['status', '--json'], { home })).stdout) as {
      agents: unknown[]
    }
    expect(status.agents).toEqual([])
  })
})
