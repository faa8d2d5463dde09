import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { addWorktree, removeWorktree, uncommitted } from '../../src/node/worktrees.js'
import { tempDir } from '../helpers/tmp.js'

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-C', cwd, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  })

/**
 * What an agent with edit rights could leave in a project's repository, outside any card: a
 * `.gitattributes` naming filter drivers, and drivers in `.git/config` that run a command of its
 * choosing whenever git checks a file out (smudge), reads one in (clean) or starts a long-running
 * filter (process). Each command leaves a line in `marker`. One name holds dots, one is required.
 */
function filteredRepo(marker: string): string {
  const dir = join(tempDir(), 'repo')
  mkdirSync(dir)
  git(dir, 'init', '-q', '-b', 'main')
  writeFileSync(join(dir, 'a.txt'), 'alpha\n')
  writeFileSync(join(dir, 'b.txt'), 'beta\n')
  writeFileSync(join(dir, '.gitattributes'), 'a.txt filter=evil\nb.txt filter=odd.name\n')
  git(dir, 'add', '.')
  git(dir, 'commit', '-q', '-m', 'first')
  const leave = (what: string) => `sh -c 'echo ${what} >> "${marker}"; cat'`
  git(dir, 'config', 'filter.evil.smudge', leave('smudge'))
  git(dir, 'config', 'filter.evil.clean', leave('clean'))
  git(dir, 'config', 'filter.evil.required', 'true')
  git(dir, 'config', 'filter.odd.name.process', `sh -c 'echo process >> "${marker}"'`)
  return dir
}

describe('a worktree for a remote start runs no filter driver of the repository (issue 28)', () => {
  it('checks out, reports and removes a worktree with no smudge, clean or process command run', () => {
    const marker = join(tempDir(), 'filter-ran')
    const repo = filteredRepo(marker)

    // The drivers are real: a plain `git worktree add` runs them. Whether it then fails depends on
    // whether git or the process driver (which speaks no protocol) gets to the pipe first, so only
    // the driver's mark is asserted, not git's exit status.
    spawnSync(
      'git',
      ['-C', repo, 'worktree', 'add', '-q', '-b', 'probe', join(tempDir(), 'probe')],
      {
        stdio: 'ignore',
      },
    )
    expect(readFileSync(marker, 'utf8')).toMatch(/smudge|process/)
    execFileSync('rm', [marker])

    const path = join(tempDir(), 'wt')
    addWorktree(repo, path, 'kith/session-1')
    expect(readFileSync(join(path, 'a.txt'), 'utf8')).toBe('alpha\n')
    expect(readFileSync(join(path, 'b.txt'), 'utf8')).toBe('beta\n')
    expect(existsSync(marker)).toBe(false)

    // A changed file is read back for `status` (clean): no driver runs either.
    writeFileSync(join(path, 'a.txt'), 'changed\n')
    expect(uncommitted(path)).toBe('1 uncommitted file (a.txt)')
    expect(existsSync(marker)).toBe(false)
    removeWorktree(path, true)
    expect(existsSync(path)).toBe(false)
    expect(existsSync(marker)).toBe(false)
  })
})
