import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { runKith, setupKith, startNodeProcess } from '../helpers/cli.js'
import { askForReply } from '../helpers/node-chat.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-C', cwd, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
    encoding: 'utf8',
  })

/** A real git repository with one commit. */
function repo(): string {
  const dir = join(tempDir(), 'repo')
  mkdirSync(dir)
  git(dir, 'init', '-q', '-b', 'main')
  writeFileSync(join(dir, 'README.md'), 'hello\n')
  writeFileSync(join(dir, '.gitignore'), '.env\nbuild/\n')
  git(dir, 'add', '.')
  git(dir, 'commit', '-q', '-m', 'first')
  return dir
}

/** `kith session new …`: its exit code, what it said, and the session's short id. */
async function start(home: string, args: string[]) {
  const r = await runKith(['session', 'new', 'bot', ...args], { home })
  const id = /^session ([0-9a-f]{12}) started/.exec(r.stdout)?.[1]
  return { ...r, id }
}

describe('sessions started remotely in projects and worktrees (real git, fake ACP agent)', () => {
  it(
    'refuses what is not a project, makes a worktree on a new branch, and removes it on close only when clean',
    { timeout: 120_000 },
    async () => {
      const home = join(tempDir(), 'h')
      await setupKith(['init', '--name', 'box'], { home })
      const add = await runKith(
        ['agent', 'add', 'bot', '--', process.execPath, fakeAgent, '--modes', '--close'],
        { home },
      )
      expect(add.code, add.stderr).toBe(0)
      const source = repo()
      const plain = tempDir()
      expect(
        (await setupKith(['project', 'add', 'kith', source, '--worktrees'], { home })).code,
      ).toBe(0)
      expect((await setupKith(['project', 'add', 'plain', plain], { home })).code).toBe(0)
      const refused = await setupKith(['project', 'add', 'x', plain, '--worktrees'], { home })
      expect(refused.stderr).toMatch(/is not a git repository: --worktrees needs one/)
      // Never in KITH_HOME, where every call would touch Kith's state, beside the keys.
      const inHome = await setupKith(
        ['project', 'add', 'y', source, '--worktrees', '--worktree-root', join(home, 'trees')],
        { home },
      )
      expect(inHome.code).toBe(1)
      expect(inHome.stderr).toMatch(/trees is inside KITH_HOME: worktrees go beside the project/)
      const node = await startNodeProcess(home, ['--port', '0'])

      // What the host does not allow is refused, with the reason.
      const nope = await start(home, ['--project', 'etc', 'pwd'])
      expect(nope.code).toBe(1)
      expect(nope.stderr).toMatch(
        /⚠ bot did not start a session: etc is not a project this machine lets agents start in \(its owner lists them: kith project list\)/,
      )
      const noTree = await start(home, ['--project', 'plain', '--worktree', 'pwd'])
      expect(noTree.code).toBe(1)
      expect(noTree.stderr).toMatch(/project plain does not allow worktrees/)

      // In the project's directory.
      const inPlain = await start(home, ['--project', 'plain', 'pwd'])
      expect(inPlain.code, inPlain.stderr).toBe(0)

      // In a new worktree on a new branch, in the mode asked for.
      const s = await start(home, ['--project', 'kith', '--worktree', '--mode', 'plan', 'pwd'])
      expect(s.code, s.stderr).toBe(0)
      const m = /in worktree (\S+) \(branch (kith\/bot-[0-9a-f]{8})\)/.exec(s.stdout)
      expect(m, s.stdout).not.toBeNull()
      const [, path, branch] = m!
      // Beside the project, not in KITH_HOME.
      expect(path).toBe(join(`${realpathSync(source)}.worktrees`, branch!.slice('kith/'.length)))
      expect(git(source, 'worktree', 'list')).toContain(path)
      const list = JSON.parse((await runKith(['session', 'list', '--json'], { home })).stdout) as {
        sessions: { id: string; thread: string; project?: string }[]
      }
      const thread = list.sessions.find((x) => x.id === s.id)!.thread
      expect(await askForReply(home, '@bot pwd', thread)).toBe(`cwd: ${path}`)
      expect(await askForReply(home, '@bot mode', thread)).toBe('mode: plan, model: none')

      // Never closed with uncommitted changes: it says so, and nothing is removed.
      writeFileSync(join(path!, 'wip.txt'), 'half done\n')
      const dirty = await runKith(['session', 'close', s.id!], { home })
      expect(dirty.code).toBe(1)
      expect(dirty.stdout).toContain(
        `⚠ bot did not close the session: its worktree ${path} has 1 uncommitted file (wip.txt); commit or stash them, close it with --keep, or with --force to delete them with the worktree`,
      )
      expect(existsSync(path!)).toBe(true)
      rmSync(join(path!, 'wip.txt'))
      // Nor with files git ignores (a .env, build output): git would delete them without a word.
      writeFileSync(join(path!, '.env'), 'TOKEN=mine\n')
      mkdirSync(join(path!, 'build'))
      writeFileSync(join(path!, 'build/app.js'), '\n')
      const ignored = await runKith(['session', 'close', s.id!], { home })
      expect(ignored.code).toBe(1)
      expect(ignored.stdout).toContain(
        `its worktree ${path} has 2 files git ignores (.env, build/); commit or stash them, close it with --keep, or with --force`,
      )
      expect(readFileSync(join(path!, '.env'), 'utf8')).toBe('TOKEN=mine\n')
      // Seen and asked for: --force removes it with them.
      const closed = await runKith(['session', 'close', s.id!, '--force'], { home })
      expect(closed.code, closed.stdout).toBe(0)
      expect(closed.stdout).toContain(
        `its worktree ${path} is removed with what it held (branch ${branch} is kept)`,
      )
      expect(existsSync(path!)).toBe(false)
      expect(git(source, 'branch', '--list', branch!)).toContain(branch)

      // --keep leaves it.
      const kept = await start(home, ['--project', 'kith', '--worktree', 'echo hi'])
      expect(kept.code, kept.stderr).toBe(0)
      const keptPath = /in worktree (\S+)/.exec(kept.stdout)![1]!
      const k = await runKith(['session', 'close', kept.id!, '--keep'], { home })
      expect(k.code, k.stdout).toBe(0)
      expect(k.stdout).toContain(`its worktree is kept at ${keptPath}`)
      expect(existsSync(keptPath)).toBe(true)
      expect(await node.stop()).toBe(0)
    },
  )
})
