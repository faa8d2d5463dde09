import { appendFileSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { agentLogPath, tailLines } from '../../src/cli/commands/agent-logs.js'
import { isKithError } from '../../src/errors.js'
import { runKith, spawnKith, startNodeProcess } from '../helpers/cli.js'
import { askForReply } from '../helpers/node-chat.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

async function nodeWithAgent(permissions?: string) {
  const home = join(tempDir(), 'h')
  expect((await runKith(['init', '--name', 'box'], { home })).code).toBe(0)
  const add = await runKith(
    [
      'agent',
      'add',
      'bot',
      ...(permissions === undefined ? [] : ['--permissions', permissions]),
      '--',
      process.execPath,
      fakeAgent,
    ],
    { home },
  )
  expect(add.code, add.stderr).toBe(0)
  return { home, add }
}

describe('kith agent add --permissions', () => {
  it('stores the mode in the agent record (default ask) and rejects an unknown one', async () => {
    const { home, add } = await nodeWithAgent('allow-reads')
    expect(add.stdout).toMatch(/permissions allow-reads/)
    const record = JSON.parse(readFileSync(join(home, 'agents', 'bot.json'), 'utf8')) as object
    expect(record).toMatchObject({ name: 'bot', permissions: 'allow-reads', allow: 'owner' })
    const plain = await runKith(['agent', 'add', 'plain', '--', process.execPath, fakeAgent], {
      home,
    })
    expect(plain.stdout).toMatch(/permissions ask/)
    const bad = await runKith(['agent', 'add', 'x', '--permissions', 'yolo', '--', 'y'], { home })
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/--permissions is ask, allow-reads, allow-all; got "yolo"/)
    const keyOnly = await runKith(['agent', 'add', 'k', '--permissions', 'allow-all'], { home })
    expect(keyOnly.code).toBe(2)
  })

  it('kith agent list shows permissions, and sessions and state without kith up', async () => {
    const { home } = await nodeWithAgent('allow-all')
    const list = await runKith(['agent', 'list', '--json'], { home })
    expect(list.code, list.stderr).toBe(0)
    expect((JSON.parse(list.stdout) as { agents: unknown[] }).agents).toEqual([
      expect.objectContaining({
        name: 'bot',
        status: 'active',
        permissions: 'allow-all',
        allow: 'owner',
        state: 'not running',
        sessions: 0,
        adapter: null,
        queue: null,
      }),
    ])
    const human = await runKith(['agent', 'list'], { home })
    expect(human.stdout).toMatch(/not running, 0 session\(s\), permissions allow-all/)
  })
})

describe('kith agent logs', () => {
  it('prints the last lines of the log; an unknown agent exits 5', async () => {
    const { home } = await nodeWithAgent()
    const help = await runKith(['agent', 'logs', '--help'], { home })
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/^Usage: kith agent logs NAME/)
    const none = await runKith(['agent', 'logs', 'bot'], { home })
    expect(none.code).toBe(0)
    expect(none.stderr).toMatch(/no log yet for bot/)
    writeFileSync(
      join(home, 'agents', 'bot.log'),
      Array.from({ length: 100 }, (_, i) => `line ${i + 1}\n`).join(''),
    )
    expect((await runKith(['agent', 'logs', 'bot'], { home })).stdout.split('\n')[0]).toBe(
      'line 51',
    )
    const three = await runKith(['agent', 'logs', 'bot', '--lines', '3'], { home })
    expect(three.stdout).toBe('line 98\nline 99\nline 100\n')
    const unknown = await runKith(['agent', 'logs', 'nobody'], { home })
    expect(unknown.code).toBe(5)
    expect(unknown.stderr).toMatch(/no agent named nobody on this node/)
    const usage = await runKith(['agent', 'logs'], { home })
    expect(usage.code).toBe(2)
  })

  it('names the error not-found, and tails long files across read blocks', () => {
    const home = tempDir()
    writeFileSync(join(home, 'config.json'), '{}')
    let caught: unknown
    try {
      agentLogPath(home, 'ghost')
    } catch (err) {
      caught = err
    }
    expect(isKithError(caught, 'not-found')).toBe(true)
    const file = join(home, 'big.log')
    const long = 'x'.repeat(50_000)
    writeFileSync(file, `${long}a\n${long}b\n${long}c\n`)
    expect(tailLines(file, 2)).toBe(`${long}b\n${long}c\n`)
    writeFileSync(file, 'no newline at the end')
    expect(tailLines(file, 5)).toBe('no newline at the end')
  })

  it('--follow prints what the agent appends', async () => {
    const { home } = await nodeWithAgent()
    const log = join(home, 'agents', 'bot.log')
    writeFileSync(log, 'before\n')
    const follow = spawnKith(['agent', 'logs', 'bot', '--follow', '--lines', '1'], home)
    await follow.waitFor(/following/)
    await follow.waitFor(/before/)
    appendFileSync(log, 'appended later\n')
    await follow.waitFor(/appended later/)
    follow.child.kill('SIGINT')
    expect(await follow.exit).toBe(0)
  })
})

describe('a revoked agent can be forgotten, and its name reused', () => {
  it('lists hide it unless --all; kith agent rm forgets it; add takes the name with a new key', async () => {
    const { home } = await nodeWithAgent()
    const first = (
      JSON.parse((await runKith(['agent', 'list', '--json'], { home })).stdout) as {
        agents: { npub: string }[]
      }
    ).agents[0]!.npub
    // A granted agent is not forgotten: revoke it first.
    const early = await runKith(['agent', 'rm', 'bot'], { home })
    expect(early.code).toBe(2)
    expect(early.stderr).toMatch(/bot is still granted: kith agent revoke bot first/)
    expect((await runKith(['agent', 'revoke', 'bot', '--yes'], { home })).code).toBe(0)
    // Its name is taken until it is forgotten, and add says how.
    const taken = await runKith(['agent', 'add', 'bot', '--', process.execPath, fakeAgent], {
      home,
    })
    expect(taken.code).toBe(1)
    expect(taken.stderr).toMatch(/existed here and is revoked: kith agent rm bot forgets it/)
    // Lists hide it, and say so; --all shows it.
    const list = JSON.parse((await runKith(['agent', 'list', '--json'], { home })).stdout) as {
      agents: unknown[]
      hidden: number
    }
    expect(list).toEqual({ agents: [], hidden: 1 })
    expect((await runKith(['agent', 'list'], { home })).stdout).toMatch(
      /1 agent no longer granted, not shown: kith agent list --all/,
    )
    const all = JSON.parse(
      (await runKith(['agent', 'list', '--json', '--all'], { home })).stdout,
    ) as { agents: { name: string; status: string }[] }
    expect(all.agents).toEqual([expect.objectContaining({ name: 'bot', status: 'revoked' })])

    const rm = await runKith(['agent', 'rm', 'bot'], { home })
    expect(rm.code, rm.stderr).toBe(0)
    expect(rm.stdout).toMatch(/forgot bot npub1\w+ \(revoked; its revocation stays\)/)
    for (const file of ['bot.json', 'bot.key'])
      expect(() => readFileSync(join(home, 'agents', file))).toThrow(/ENOENT/)
    expect((await runKith(['agent', 'rm', 'bot'], { home })).code).toBe(5)

    const again = await runKith(
      ['agent', 'add', 'bot', '--json', '--', process.execPath, fakeAgent],
      { home },
    )
    expect(again.code, again.stderr).toBe(0)
    const second = (JSON.parse(again.stdout) as { agent: string }).agent
    expect(second).not.toBe(first)
    // The fleet still knows the first key, revoked: --fleet --all shows both.
    const fleet = JSON.parse(
      (await runKith(['agent', 'list', '--fleet', '--all', '--json'], { home })).stdout,
    ) as { agents: { name: string; npub: string; status: string }[] }
    expect(fleet.agents).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ npub: first, status: 'revoked' }),
        expect.objectContaining({ npub: second, status: 'active' }),
      ]),
    )
  }, 120_000)
})

describe('kith agent add checks its command', () => {
  it('warns when it is not on PATH, and the failed start is in kith agent logs', async () => {
    const home = join(tempDir(), 'h')
    expect((await runKith(['init', '--name', 'box'], { home })).code).toBe(0)
    const add = await runKith(['agent', 'add', 'ghost', '--', 'no-such-agent-acp', '--acp'], {
      home,
    })
    expect(add.code, add.stderr).toBe(0)
    expect(add.stderr).toMatch(
      /⚠ no-such-agent-acp is not on PATH here: kith up could not start it/,
    )
    const notExec = await runKith(['agent', 'add', 'plain', '--json', '--', fakeAgent], { home })
    expect((JSON.parse(notExec.stdout) as { warnings: string[] }).warnings).toEqual([
      expect.stringMatching(/fake-agent\.mjs is not an executable file/),
    ])
    const fine = await runKith(['agent', 'add', 'ok', '--json', '--', process.execPath], { home })
    expect((JSON.parse(fine.stdout) as { warnings: string[] }).warnings).toEqual([])
    const badCwd = await runKith(
      ['agent', 'add', 'lost', '--cwd', join(home, 'nowhere'), '--', process.execPath],
      { home },
    )
    expect(badCwd.code).toBe(2)
    expect(badCwd.stderr).toMatch(/--cwd: .*nowhere does not exist/)

    // Prompted anyway: the channel gets one line, and the agent's log says why.
    await startNodeProcess(home, ['--port', '0'])
    expect(await askForReply(home, '@ghost hello')).toMatch(
      /^⚠ ghost did not answer: cannot start no-such-agent-acp: no-such-agent-acp was not found \(is it installed/,
    )
    const logs = await runKith(['agent', 'logs', 'ghost'], { home })
    expect(logs.stdout).toMatch(/\[kith\] \S+ cannot start no-such-agent-acp: .*not found/)
  }, 90_000)
})
