import { existsSync } from 'node:fs'
import { KithError } from '../errors.js'
import type { SessionRecord } from '../store/saved-session.js'
import { listProjects } from './projects.js'
import { git, quietGit } from './worktrees.js'

/**
 * A session's diff as its notice carries it (`kith session diff`, the web app's Diff): bounded
 * so the notice, sealed, stays well inside a hub's event size. The rest is said, not sent.
 */
export const sessionDiffMaxBytes = 24 * 1024

/** Diffs run no driver or converter the repository (or an agent writing to it) configured. */
const plainDiff = ['diff', '--no-ext-diff', '--no-textconv', '--no-color']

/** Untracked files of an open worktree shown as new files, at most this many. */
const untrackedShown = 20

/**
 * The branch diff of a session started in a worktree (`kith session new --worktree`), against
 * the commit its branch left the project from (git merge-base with the project's HEAD): while
 * its worktree is there, what is in it now (committed or not, new files included); once closed,
 * what its branch holds. Returns the notice text: a summary line, then the diff fenced.
 */
export function sessionDiff(home: string, name: string, record: SessionRecord): string {
  const wt = record.worktree
  if (wt === undefined)
    throw new KithError(
      'invalid',
      `this session runs in ${record.cwd}, not in a worktree of its own: it has no branch to diff (start one with kith session new --worktree)`,
    )
  const project = listProjects(home).find((p) => p.name === record.project)
  if (project === undefined)
    throw new KithError(
      'not-found',
      `its project ${record.project ?? '?'} is no longer one of this machine's (kith project list)`,
    )
  // Hooks, fsmonitor and filter drivers off: git diff of a worktree runs clean filters.
  const quiet = quietGit(project.dir)
  const base = git(project.dir, ['merge-base', wt.branch, 'HEAD'], quiet).trim()
  let diff: string
  if (existsSync(wt.path)) {
    diff = git(wt.path, [...plainDiff, base], quiet)
    const untracked = git(wt.path, ['ls-files', '--others', '--exclude-standard'], quiet)
      .split('\n')
      .filter((l) => l !== '')
    for (const file of untracked.slice(0, untrackedShown)) diff += gitNoIndex(wt.path, file, quiet)
    if (untracked.length > untrackedShown)
      diff += `# … and ${untracked.length - untrackedShown} more new files\n`
  } else diff = git(project.dir, [...plainDiff, base, wt.branch], quiet)
  const files = (diff.match(/^diff --git /gm) ?? []).length
  const head = `✓ ${name}: branch ${wt.branch} against ${base.slice(0, 10)} (where it left ${project.name})${existsSync(wt.path) ? ', its worktree as it is now' : ''}: ${files === 0 ? 'no changes' : `${files} file${files === 1 ? '' : 's'} changed`}`
  if (files === 0) return head
  const bytes = Buffer.byteLength(diff)
  const shown =
    bytes <= sessionDiffMaxBytes
      ? diff
      : `${Buffer.from(diff)
          .subarray(0, sessionDiffMaxBytes)
          .toString('utf8')
          .replace(
            /\n[^\n]*$/,
            '\n',
          )}# … cut: the whole diff is ${bytes} bytes (git diff ${base.slice(0, 10)} ${wt.branch} on ${project.name})\n`
  return `${head}\n\n\`\`\`diff\n${shown.replace(/\n$/, '')}\n\`\`\``
}

/** A new file as a diff (git diff --no-index exits 1 when the files differ, as they do). */
function gitNoIndex(cwd: string, file: string, quiet: NodeJS.ProcessEnv): string {
  try {
    return git(cwd, [...plainDiff, '--no-index', '--', '/dev/null', file], quiet)
  } catch (err) {
    const stdout =
      err instanceof KithError ? (err.cause as { stdout?: unknown })?.stdout : undefined
    if (typeof stdout === 'string' && stdout !== '') return stdout
    throw err
  }
}
