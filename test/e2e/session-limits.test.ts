import { execFileSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { runKith, setupKith, startNodeProcess } from '../helpers/cli.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-C', cwd, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
    encoding: 'utf8',
  })

/**
 * A real git repository with one commit, a post-checkout hook and a smudge filter driver (named
 * by a committed .gitattributes) that each leave `marker` behind: what an agent with edit rights
 * could have written into it earlier, outside any card.
 */
function hookedRepo(marker: string): string {
  const dir = join(tempDir(), 'repo')
  mkdirSync(dir)
  git(dir, 'init', '-q', '-b', 'main')
  writeFileSync(join(dir, 'README.md'), 'hello\n')
  writeFileSync(join(dir, '.gitattributes'), 'README.md filter=evil\n')
  git(dir, 'add', '.')
  git(dir, 'commit', '-q', '-m', 'first')
  git(dir, 'config', 'filter.evil.smudge', `sh -c 'echo ran > "${marker}"; cat'`)
  const hook = join(dir, '.git', 'hooks', 'post-checkout')
  writeFileSync(hook, `#!/bin/sh\necho ran > '${marker}'\n`)
  chmodSync(hook, 0o755)
  return dir
}

async function start(home: string, args: string[]) {
  const r = await runKith(['session', 'new', 'bot', ...args], { home })
  return { ...r, id: /^session ([0-9a-f]{12}) started/.exec(r.stdout)?.[1] }
}

describe('what a session start may cost its host (issue 28, item 8)', () => {
  it(
    'caps live sessions and worktrees per agent, naming the cap; runs no repository hook; names no project in a refusal',
    { timeout: 120_000 },
    async () => {
      const home = join(tempDir(), 'h')
      await setupKith(['init', '--name', 'box'], { home })
      const bad = await runKith(
        ['agent', 'add', 'bot', '--max-sessions', '0', '--', process.execPath, fakeAgent],
        { home },
      )
      expect(bad.code).toBe(2)
      expect(bad.stderr).toMatch(/--max-sessions takes a whole number from 1/)
      const add = await runKith(
        [
          'agent',
          'add',
          'bot',
          '--max-sessions',
          '2',
          '--max-worktrees',
          '1',
          '--',
          process.execPath,
          fakeAgent,
        ],
        { home },
      )
      expect(add.code, add.stderr).toBe(0)
      const marker = join(tempDir(), 'hook-ran')
      const source = hookedRepo(marker)
      // The hook is real: a plain checkout in the repository runs it.
      git(source, 'checkout', '-q', '-b', 'probe')
      expect(existsSync(marker)).toBe(true)
      git(source, 'checkout', '-q', 'main')
      execFileSync('rm', [marker])
      // So is the filter: a plain checkout of the file runs it.
      execFileSync('rm', [join(source, 'README.md')])
      git(source, 'checkout', '-q', '--', 'README.md')
      expect(existsSync(marker)).toBe(true)
      execFileSync('rm', [marker])
      expect(
        (await setupKith(['project', 'add', 'work', source, '--worktrees'], { home })).code,
      ).toBe(0)
      expect((await setupKith(['project', 'add', 'private-plans', tempDir()], { home })).code).toBe(
        0,
      )
      const node = await startNodeProcess(home, ['--port', '0'])

      // A refused start names none of the host's projects.
      const nope = await start(home, ['--project', 'etc', 'pwd'])
      expect(nope.code).toBe(1)
      expect(nope.stderr).toMatch(/⚠ bot did not start a session: etc is not a project/)
      expect(nope.stderr).not.toMatch(/private-plans|work/)

      // A worktree start makes the worktree, and neither the repository's hook nor its filter runs.
      const tree = await start(home, ['--project', 'work', '--worktree', 'pwd'])
      expect(tree.code, tree.stderr).toBe(0)
      expect(tree.stdout).toMatch(/in worktree /)
      expect(existsSync(marker)).toBe(false)

      // A second worktree is past bot's cap of one: refused, naming the cap.
      const tree2 = await start(home, ['--project', 'work', '--worktree', 'pwd'])
      expect(tree2.code).toBe(1)
      expect(tree2.stderr).toMatch(
        /⚠ bot did not start a session: bot has 1 worktree, its cap of 1 \(.*--max-worktrees N\)/,
      )

      // A second session is within the cap of two; a third is not.
      const second = await start(home, ['--project', 'work', 'pwd'])
      expect(second.code, second.stderr).toBe(0)
      const third = await start(home, ['--project', 'work', 'pwd'])
      expect(third.code).toBe(1)
      expect(third.stderr).toMatch(
        /⚠ bot did not start a session: bot has 2 open sessions, its cap of 2 \(.*--max-sessions N\)/,
      )
      expect(existsSync(marker)).toBe(false)

      // Closing one makes room again.
      expect((await runKith(['session', 'close', second.id!], { home })).code).toBe(0)
      const fourth = await start(home, ['--project', 'work', 'pwd'])
      expect(fourth.code, fourth.stderr).toBe(0)
      expect(await node.stop()).toBe(0)
    },
  )
})
