import { appendFileSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { agentLogPath, tailLines } from '../../src/cli/commands/agent-logs.js'
import { isKithError } from '../../src/errors.js'
import { runKith, spawnKith } from '../helpers/cli.js'
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
