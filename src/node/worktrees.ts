import { execFileSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { KithError } from '../errors.js'

/** git can take a while on a large repository; it never runs unbounded. */
const gitTimeoutMs = 60_000

function git(cwd: string, args: string[]): string {
  try {
    return execFileSync('git', ['-C', cwd, ...args], {
      encoding: 'utf8',
      timeout: gitTimeoutMs,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
  } catch (err) {
    const stderr = (err as { stderr?: unknown }).stderr
    const why = typeof stderr === 'string' && stderr.trim() !== '' ? stderr.trim() : String(err)
    const verb = args.find((a, i) => !a.startsWith('-') && args[i - 1] !== '-c') ?? ''
    throw new KithError('io', `git ${verb} failed: ${why}`, { cause: err })
  }
}

export function isGitRepo(dir: string): boolean {
  try {
    git(dir, ['rev-parse', '--git-dir'])
    return true
  } catch (err) {
    // Not a repository (or no git): the caller says so.
    if (err instanceof KithError) return false
    throw err
  }
}

/**
 * What git may run on its own in a repository an agent may have written to (its hooks, an
 * fsmonitor command in its config): switched off for every git call made for a remote start,
 * so nothing runs outside a card.
 */
const noRepoCommands = ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false']

/** `git worktree add -b BRANCH PATH` from the repository's HEAD, with no hook run. */
export function addWorktree(repo: string, path: string, branch: string): void {
  mkdirSync(dirname(path), { recursive: true })
  git(repo, [...noRepoCommands, 'worktree', 'add', '-b', branch, path])
}

/** What is uncommitted in a worktree ("2 changed files"), or undefined when it is clean. */
export function uncommitted(path: string): string | undefined {
  const lines = git(path, [...noRepoCommands, 'status', '--porcelain'])
    .split('\n')
    .filter((l) => l.trim() !== '')
  if (lines.length === 0) return undefined
  // Named, so a person knows what to commit or stash (porcelain: two status letters, a space).
  const names = lines.slice(0, 3).map((l) => l.slice(3))
  return `${lines.length} uncommitted file${lines.length === 1 ? '' : 's'} (${names.join(', ')}${lines.length > 3 ? ', …' : ''})`
}

/** `git worktree remove PATH` (its branch is kept). Refused by git when it is not clean. */
export function removeWorktree(path: string): void {
  // The main repository, where the worktree is registered (its common git dir's parent).
  const common = git(path, ['rev-parse', '--path-format=absolute', '--git-common-dir']).trim()
  git(dirname(common), [...noRepoCommands, 'worktree', 'remove', path])
}
