// Sessions from anywhere (threads are sessions) against real agents: a worktree session started
// from the laptop and answered by codex-acp, its mode changed remotely; claude-agent-acp's
// session listed and closed from the laptop.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SessionState } from '../../src/events/session-state.js'
import { runKith } from '../helpers/cli.js'
import { startCodexFleet } from './codex-fleet.js'
import { pinnedFile, startFleet } from './fleet.js'
import { startMockModel, type MockModel } from './mock-model.js'

type Listed = SessionState & { agentName: string }

async function sessions(home: string, all = false): Promise<Listed[]> {
  const r = await runKith(['session', 'list', '--json', ...(all ? ['--all'] : [])], { home })
  expect(r.code, r.stderr).toBe(0)
  return (JSON.parse(r.stdout) as { sessions: Listed[] }).sessions
}

/** The first listed session for which `ok` holds, once there is one. */
async function listed(home: string, ok: (s: Listed) => boolean, all = false): Promise<Listed> {
  let found: Listed | undefined
  await expect
    .poll(
      async () => {
        found = (await sessions(home, all)).find(ok)
        return found !== undefined
      },
      { timeout: 60_000, interval: 300 },
    )
    .toBe(true)
  return found!
}

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-C', cwd, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
    encoding: 'utf8',
  })

let model: MockModel
beforeAll(async () => {
  model = await startMockModel()
})
afterAll(async () => {
  await model.close()
})

describe('sessions from anywhere with real agents', { timeout: 180_000 }, () => {
  it('codex-acp answers a session started from the laptop in a new worktree, and its mode changes remotely', async () => {
    model.respond((req) =>
      req.lastUserText.includes('status of the worktree')
        ? { text: 'The worktree is clean (mock model).' }
        : { text: 'unexpected request' },
    )
    const fleet = await startCodexFleet(model)
    const repo = join(fleet.dir, 'app')
    mkdirSync(repo)
    git(repo, 'init', '-q', '-b', 'main')
    writeFileSync(join(repo, 'README.md'), 'app\n')
    git(repo, 'add', '.')
    git(repo, 'commit', '-q', '-m', 'first')
    const added = await runKith(['project', 'add', 'app', repo, '--worktrees'], {
      home: fleet.devbox,
    })
    expect(added.code, added.stderr).toBe(0)

    const started = await runKith(
      [
        'session',
        'new',
        'codex',
        '--project',
        'app',
        '--worktree',
        'what is the status of the worktree?',
      ],
      { home: fleet.laptop },
    )
    expect(started.code, started.stderr).toBe(0)
    const m = /in worktree (\S+) \(branch (kith\/codex-[0-9a-f]{8})\)/.exec(started.stdout)
    expect(m, started.stdout).not.toBeNull()
    const [, path] = m!
    expect(git(repo, 'worktree', 'list')).toContain(path)
    const s = await listed(fleet.laptop, (x) => x.agentName === 'codex' && x.cwd === path)
    const answer = await fleet.threaded(s.thread!)
    expect(answer.event.content.endsWith('The worktree is clean (mock model).')).toBe(true)
    expect(answer.event.pubkey).toBe(fleet.agentPubkey)

    // codex-acp reports its modes; one other than the current is set from the laptop.
    const withModes = await listed(
      fleet.laptop,
      (x) => x.id === s.id && (x.modes?.length ?? 0) > 1 && x.mode !== undefined,
    )
    const other = withModes.modes!.find((mode) => mode.id !== withModes.mode)!.id
    const set = await runKith(['session', 'set', s.id, '--mode', other], { home: fleet.laptop })
    expect(set.code, set.stdout + set.stderr).toBe(0)
    await listed(fleet.laptop, (x) => x.id === s.id && x.mode === other)

    // Closed from the laptop: the clean worktree is removed.
    const closed = await runKith(['session', 'close', s.id], { home: fleet.laptop })
    expect(closed.code, closed.stdout + closed.stderr).toBe(0)
    expect(existsSync(path!)).toBe(false)
    await listed(fleet.laptop, (x) => x.id === s.id && x.status === 'closed', true)
  })

  it('claude-agent-acp’s session is listed and closed from the laptop', async () => {
    const claudeAcp = pinnedFile('@zed-industries', 'claude-agent-acp', 'dist', 'index.js')
    const fleet = await startFleet({ name: 'claude', command: [process.execPath, claudeAcp] })
    const q = await fleet.ask('@claude hello, are you there?')
    expect((await fleet.threaded(q)).event.content).toBe(
      '⚠ claude did not answer: authentication required',
    )
    // session/new succeeded before the prompt failed: the session is the thread's.
    const s = await listed(fleet.laptop, (x) => x.agentName === 'claude' && x.thread === q)
    expect(s).toMatchObject({ channel: 'ops', cwd: fleet.agentCwd })
    const closed = await runKith(['session', 'close', s.id], { home: fleet.laptop })
    expect(closed.code, closed.stdout + closed.stderr).toBe(0)
    await listed(fleet.laptop, (x) => x.id === s.id && x.status === 'closed', true)
    expect((await sessions(fleet.laptop)).some((x) => x.id === s.id)).toBe(false)
  })
})
