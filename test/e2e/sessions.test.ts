import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import type { SessionState } from '../../src/events/session-state.js'
import { runKith, setupKith, startNodeProcess } from '../helpers/cli.js'
import { ask, askForReply, threadedUnder } from '../helpers/node-chat.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

type Listed = SessionState & { agentName: string; hostName: string }

async function list(home: string, all = false): Promise<Listed[]> {
  const r = await runKith(['session', 'list', '--json', ...(all ? ['--all'] : [])], { home })
  expect(r.code, r.stderr).toBe(0)
  return (JSON.parse(r.stdout) as { sessions: Listed[] }).sessions
}

/** The listed session of the thread rooted at `root`, once `ok` holds of it. */
async function sessionOf(
  home: string,
  root: string,
  ok: (s: Listed) => boolean = () => true,
  all = false,
): Promise<Listed> {
  let found: Listed | undefined
  await expect
    .poll(
      async () => {
        found = (await list(home, all)).find((s) => s.thread === root)
        return found !== undefined && ok(found)
      },
      { timeout: 20_000 },
    )
    .toBe(true)
  return found!
}

describe('threads are sessions (kith up, fake ACP agent)', () => {
  it(
    'two threads side by side; listed, shown, configured and closed from the CLI',
    { timeout: 120_000 },
    async () => {
      const home = join(tempDir(), 'h')
      await setupKith(['init', '--name', 'box'], { home })
      const add = await runKith(
        [
          'agent',
          'add',
          'bot',
          '--',
          process.execPath,
          fakeAgent,
          '--modes',
          '--model-option',
          '--close',
        ],
        { home },
      )
      expect(add.code, add.stderr).toBe(0)
      const node = await startNodeProcess(home, ['--port', '0'])

      // A top-level mention starts a thread and a session; the agent's title and usage show.
      const first = await ask(home, '@bot usage')
      expect((await threadedUnder(home, first))[0]!.event.content).toBe('counted')
      const s1 = await sessionOf(
        home,
        first,
        (s) => s.status === 'idle' && s.usage !== undefined && s.commands !== undefined,
      )
      expect(s1).toMatchObject({
        agentName: 'bot',
        hostName: 'box',
        channel: 'ops',
        title: 'Counting tokens',
        mode: 'default',
        model: 'fake-large',
        models: ['fake-large', 'fake-small'],
        usage: { used: 1200, size: 200000, cost: { amount: 0.05, currency: 'USD' } },
      })
      expect(s1.commands!.map((c) => c.name)).toEqual(['review', 'compact'])

      // Two threads of one agent in one channel run side by side.
      const hung = await ask(home, '@bot hang')
      await sessionOf(home, hung, (s) => s.status === 'working')
      expect(await askForReply(home, '@bot echo beside it')).toBe('beside it')
      expect((await threadedUnder(home, hung, { count: 0 })).length).toBe(0)
      expect((await runKith(['cancel', '#ops', 'bot'], { home })).code).toBe(0)
      expect((await threadedUnder(home, hung))[0]!.event.content).toBe('⏹ bot: turn cancelled')

      // /mode in a thread changes that session; its own commands run as /name.
      expect(await askForReply(home, '@bot /mode plan', first)).toBe(
        '✓ mode plan set for this session',
      )
      expect(await askForReply(home, '@bot mode', first)).toBe('mode: plan, model: fake-large')
      expect(await askForReply(home, '@bot /review', first)).toBe('reviewed: nothing to say')

      // kith session set and show, by the short id.
      const set = await runKith(['session', 'set', s1.id.slice(0, 6), '--model', 'fake-small'], {
        home,
      })
      expect(set.code, set.stderr).toBe(0)
      expect(set.stdout).toMatch(/✓ bot: this session's model fake-small set/)
      expect(await askForReply(home, '@bot mode', first)).toBe('mode: plan, model: fake-small')
      await sessionOf(home, first, (s) => s.mode === 'plan' && s.model === 'fake-small')
      // Any other session config option, listed and set the same way.
      const effort = await runKith(['session', 'set', s1.id, '--option', 'effort=high'], { home })
      expect(effort.code, effort.stdout).toBe(0)
      expect(await askForReply(home, '@bot effort', first)).toBe('effort: high')
      await sessionOf(home, first, (s) => s.options?.[0]?.value === 'high')
      const show = await runKith(['session', 'show', s1.id], { home })
      expect(show.stdout).toMatch(/option {4}effort = high \(of low, medium, high\) {2}Effort/)
      expect(show.code, show.stderr).toBe(0)
      expect(show.stdout).toMatch(
        /mode {6}plan \(of default, acceptEdits, plan, bypassPermissions\)/,
      )
      expect(show.stdout).toMatch(/\/review {2}review the changes/)
      expect(show.stdout).toMatch(/usage {5}1200\/200000 tokens, 0\.05 USD/)

      // kith log --thread: the thread's messages only.
      const log = await runKith(['log', '#ops', '--thread', first.slice(0, 8)], { home })
      expect(log.code, log.stderr).toBe(0)
      expect(log.stdout).toMatch(/@bot usage/)
      expect(log.stdout).toMatch(/counted/)
      expect(log.stdout).toMatch(/reviewed: nothing to say/)
      expect(log.stdout).not.toMatch(/beside it/)

      // Closed with ACP session/close: gone from the list, kept with --all.
      const close = await runKith(['session', 'close', s1.id], { home })
      expect(close.code, close.stderr).toBe(0)
      expect(close.stdout).toMatch(/✓ bot closed this session \(ACP session\/close\)/)
      await expect
        .poll(async () => (await list(home)).some((s) => s.id === s1.id), { timeout: 20_000 })
        .toBe(false)
      expect((await sessionOf(home, first, () => true, true)).status).toBe('closed')
      const again = await runKith(['session', 'close', s1.id], { home })
      expect(again.code).toBe(1)
      expect(again.stdout).toMatch(/⚠ bot has no open session there \(it was closed\)/)
      expect(await node.stop()).toBe(0)
    },
  )
})

describe("a channel's session from before threads were sessions", () => {
  it(
    "carries on as the channel's main thread: replies in old threads resume it",
    { timeout: 120_000 },
    async () => {
      const home = join(tempDir(), 'h')
      await setupKith(['init', '--name', 'box'], { home })
      const add = await setupKith(['agent', 'add', 'bot', '--', process.execPath, fakeAgent], {
        home,
      })
      expect(add.code, add.stderr).toBe(0)
      let node = await startNodeProcess(home, ['--port', '0'])
      const old = await ask(home, '@bot echo one')
      expect((await threadedUnder(home, old))[0]!.event.content).toBe('one')
      expect(await node.stop()).toBe(0)
      // As the migration leaves a session kept per (agent, channel): the channel's main thread.
      const db = new Database(join(home, 'node.db'))
      expect(db.prepare("UPDATE agent_sessions SET thread = ''").run().changes).toBe(1)
      db.close()

      node = await startNodeProcess(home, ['--port', '0'])
      // A reply in a thread of before goes to the main thread's session, resumed.
      expect(await askForReply(home, '@bot echo two', old)).toBe('two')
      await node.waitFor(/agent bot: resumed session fake-1 for #ops(?! \()/)
      const sessions = (
        JSON.parse((await runKith(['session', 'list', '--json'], { home })).stdout) as {
          sessions: Listed[]
        }
      ).sessions
      expect(sessions.map((s) => s.thread ?? 'main')).toContain('main')
      expect(await node.stop()).toBe(0)
    },
  )
})
