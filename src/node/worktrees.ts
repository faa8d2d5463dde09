import { execFileSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { KithError } from '../errors.js'

/** git can take a while on a large repository; it never runs unbounded. */
const gitTimeoutMs = 60_000

export function git(cwd: string, args: string[], env?: NodeJS.ProcessEnv): string {
  try {
    return execFileSync('git', ['-C', cwd, ...args], {
      encoding: 'utf8',
      timeout: gitTimeoutMs,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(env === undefined ? {} : { env }),
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
 * What git may run on its own in a repository an agent may have written to, switched off for
 * every git call made for a remote start, so nothing runs outside a card: its hooks, an
 * fsmonitor command, and every filter driver (`filter.NAME.smudge|clean|process`, chosen per
 * file by a `.gitattributes` the agent may also have written). A filter is switched off by
 * emptying its commands, which git reads as "no filter", and `required=false`, so git does not
 * refuse the file instead. Every configured name is read first (`git config --get-regexp`, which
 * follows includes) and overridden through GIT_CONFIG_COUNT, which takes any name as it is
 * (`-c` cannot say a name holding `=`). An LFS repository's files come out as pointer files.
 */
export function quietGit(repo: string): NodeJS.ProcessEnv {
  const pairs: [string, string][] = [
    ['core.hooksPath', '/dev/null'],
    ['core.fsmonitor', 'false'],
  ]
  for (const name of filterNames(repo)) {
    for (const v of ['smudge', 'clean', 'process']) pairs.push([`filter.${name}.${v}`, ''])
    pairs.push([`filter.${name}.required`, 'false'])
  }
  const env: NodeJS.ProcessEnv = { ...process.env, GIT_CONFIG_COUNT: String(pairs.length) }
  // The caller's own GIT_CONFIG_PARAMETERS (-c of an enclosing git) could add a filter back.
  delete env.GIT_CONFIG_PARAMETERS
  pairs.forEach(([k, v], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = k
    env[`GIT_CONFIG_VALUE_${i}`] = v
  })
  return env
}

/** Every filter driver name configured for `repo` (repository, user and system config). */
function filterNames(repo: string): string[] {
  let out: string
  try {
    out = execFileSync('git', ['-C', repo, 'config', '--null', '--get-regexp', '^filter\\.'], {
      encoding: 'utf8',
      timeout: gitTimeoutMs,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
  } catch (err) {
    // Exit 1 is "no such key": no filter is configured. Anything else is a failure.
    if ((err as { status?: unknown }).status === 1) return []
    throw new KithError('io', `git config failed: ${String(err)}`, { cause: err })
  }
  const names = new Set<string>()
  for (const entry of out.split('\0')) {
    // With --null each entry is "KEY\nVALUE"; KEY is filter.NAME.VAR, and NAME may hold dots.
    const key = entry.split('\n')[0] ?? ''
    const last = key.lastIndexOf('.')
    if (key.startsWith('filter.') && last > 'filter.'.length) names.add(key.slice(7, last))
  }
  return [...names]
}

/** `git worktree add -b BRANCH PATH` from the repository's HEAD, with no hook or filter run. */
export function addWorktree(repo: string, path: string, branch: string): void {
  mkdirSync(dirname(path), { recursive: true })
  git(repo, ['worktree', 'add', '-b', branch, path], quietGit(repo))
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
  const lines = git(
    path,
    ['status', '--porcelain', '--ignored', '--untracked-files=normal'],
    quietGit(path),
  )
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
  const repo = dirname(common)
  git(repo, ['worktree', 'remove', ...(force ? ['--force'] : []), path], quietGit(repo))
}
