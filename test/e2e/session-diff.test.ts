// kith session diff: what a worktree session changed, against where it left its project.
import { execFileSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
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

describe('kith session diff (real git, fake ACP agent, kith up)', () => {
  it(
    "shows an open session's worktree and a closed one's branch against its base; --json; clear refusals",
    { timeout: 150_000 },
    async () => {
      const home = join(tempDir(), 'h')
      await setupKith(['init', '--name', 'box'], { home })
      const add = await setupKith(
        ['agent', 'add', 'bot', '--', process.execPath, fakeAgent, '--close'],
        { home },
      )
      expect(add.code, add.stderr).toBe(0)
      const source = join(tempDir(), 'repo')
      mkdirSync(source)
      git(source, 'init', '-q', '-b', 'main')
      writeFileSync(join(source, 'README.md'), 'hello wrold\n')
      git(source, 'add', '.')
      git(source, 'commit', '-q', '-m', 'first')
      const plain = tempDir()
      expect(
        (await setupKith(['project', 'add', 'app', source, '--worktrees'], { home })).code,
      ).toBe(0)
      expect((await setupKith(['project', 'add', 'plain', plain], { home })).code).toBe(0)
      await startNodeProcess(home, ['--port', '0'])

      const started = await runKith(
        ['session', 'new', 'bot', '--project', 'app', '--worktree', 'pwd'],
        { home },
      )
      expect(started.code, started.stderr).toBe(0)
      const id = /^session ([0-9a-f]{12}) started/.exec(started.stdout)![1]!
      const shown = JSON.parse(
        (await runKith(['session', 'show', id, '--json'], { home })).stdout,
      ) as {
        worktree: { path: string; branch: string }
      }
      const tree = shown.worktree.path
      // What the agent did there: an edit and a new file, not committed.
      writeFileSync(join(tree, 'README.md'), 'hello world\n')
      writeFileSync(join(tree, 'NOTES.md'), 'a new file\n')
      // The project moves on meanwhile: the diff is against where the session left it.
      writeFileSync(join(source, 'OTHER.md'), 'unrelated\n')
      git(source, 'add', '.')
      git(source, 'commit', '-q', '-m', 'second')

      const open = await runKith(['session', 'diff', id], { home })
      expect(open.code, open.stderr).toBe(0)
      expect(open.stdout).toMatch(
        new RegExp(
          `^✓ bot: branch ${shown.worktree.branch} against [0-9a-f]{10} \\(where it left app\\), its worktree as it is now: 2 files changed`,
        ),
      )
      expect(open.stdout).toContain('-hello wrold\n+hello world')
      expect(open.stdout).toContain('+a new file')
      expect(open.stdout).not.toContain('OTHER.md')

      // Committed and closed: the branch holds it; the diff is the same, read from the branch.
      git(tree, 'add', '.')
      git(tree, 'commit', '-q', '-m', 'fix')
      const closed = await runKith(['session', 'close', id], { home })
      expect(closed.code, closed.stdout + closed.stderr).toBe(0)
      const after = await runKith(['session', 'diff', id, '--json'], { home })
      expect(after.code, after.stderr).toBe(0)
      const j = JSON.parse(after.stdout) as { ok: boolean; summary: string; diff: string }
      expect(j.ok).toBe(true)
      expect(j.summary).toMatch(
        /^✓ bot: branch kith\/\S+ against [0-9a-f]{10} \(where it left app\): 2 files changed$/,
      )
      expect(j.diff).toMatch(/^diff --git a\/NOTES.md b\/NOTES.md/)
      expect(j.diff).toContain('+hello world\n')

      // A session in a plain directory has no branch: said so, exit 1.
      const p = await runKith(['session', 'new', 'bot', '--project', 'plain', 'pwd'], { home })
      const pid = /^session ([0-9a-f]{12}) started/.exec(p.stdout)![1]!
      const none = await runKith(['session', 'diff', pid], { home })
      expect(none.code).toBe(1)
      expect(none.stdout).toMatch(
        /^⚠ bot has no diff to show: this session runs in .*, not in a worktree of its own/,
      )
      const noId = await runKith(['session', 'diff'], { home })
      expect(noId.code).toBe(2)
      expect(noId.stderr).toMatch(/kith session diff needs a session ID/)
    },
  )
})
