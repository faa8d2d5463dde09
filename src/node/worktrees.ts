import { execFileSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { KithError } from '../errors.js'

/** git can take a while on a large repository; it never runs unbounded. */
const gitTimeoutMs = 60_000

export function git(cwd: string, args: string[]): string {
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
export const noRepoCommands = ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false']

/** `git worktree add -b BRANCH PATH` from the repository's HEAD, with no hook run. */
export function addWorktree(repo: string, path: string, branch: string): void {
  mkdirSync(dirname(path), { recursive: true })
  git(repo, [...noRepoCommands, 'worktree', 'add', '-b', branch, path])
}

/** At most this many names of each sort in what `uncommitted` says. */
const namesShown = 10

/** "3 uncommitted files (a, b, c)", the names cut after `namesShown`. */
function counted(names: string[], one: string, many: string): string {
  const more = names.length > namesShown ? `, … ${names.length - namesShown} more` : ''
  return `${names.length} ${names.length === 1 ? one : many} (${names.slice(0, namesShown).join(', ')}${more})`
}

/**
 * What removing a worktree would lose, or undefined when it holds nothing uncommitted: changed
 * and untracked files, and the files git ignores (a .env, build output), which `git worktree
 * remove` deletes without a word. Named, so a person sees what they would lose.
 */
export function uncommitted(path: string): string | undefined {
  const lines = git(path, [
    ...noRepoCommands,
    'status',
    '--porcelain',
    '--ignored',
    '--untracked-files=normal',
  ])
    .split('\n')
    .filter((l) => l.trim() !== '')
  // porcelain: two status letters, a space, the path; `!!` is ignored.
  const ignored = lines.filter((l) => l.startsWith('!!')).map((l) => l.slice(3))
  const changed = lines.filter((l) => !l.startsWith('!!')).map((l) => l.slice(3))
  const parts = [
    ...(changed.length === 0 ? [] : [counted(changed, 'uncommitted file', 'uncommitted files')]),
    ...(ignored.length === 0 ? [] : [counted(ignored, 'file git ignores', 'files git ignores')]),
  ]
  return parts.length === 0 ? undefined : parts.join(' and ')
}

/**
 * `git worktree remove PATH` (its branch is kept). Refused by git when it is not clean, unless
 * `force`: then what it holds goes with it (the caller has shown the person the list first).
 */
export function removeWorktree(path: string, force = false): void {
  // The main repository, where the worktree is registered (its common git dir's parent).
  const common = git(path, ['rev-parse', '--path-format=absolute', '--git-common-dir']).trim()
  git(dirname(common), [
    ...noRepoCommands,
    'worktree',
    'remove',
    ...(force ? ['--force'] : []),
    path,
  ])
}
