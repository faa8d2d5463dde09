import {
  existsSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path'
import { KithError } from '../errors.js'
import { isProjectName, type SessionStart } from '../events/session-start.js'
import { addWorktree, isGitRepo } from './worktrees.js'

/**
 * The directories this machine lets agents be started in from other devices (`kith project add`),
 * in KITH_HOME/projects.json. A remote `kith session new --project NAME` names one of them; no
 * other directory can be asked for.
 */
export interface Project {
  name: string
  /** Its real path (symlinks resolved when added). */
  dir: string
  /** Sessions may ask for a git worktree of it of their own (`--worktree`). */
  worktrees: boolean
  /** Where their worktrees go (`--worktree-root`); absent: beside the project (worktreeRoot). */
  worktreeRoot?: string
}

/** `child` is `parent` or inside it (both absolute). */
function within(parent: string, child: string): boolean {
  const rel = relative(parent, child)
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel))
}

/** `path` with symlinks resolved as far as it exists (a root is made on first use). */
function realAsFar(path: string): string {
  if (existsSync(path)) return realpathSync(path)
  const parent = dirname(path)
  return parent === path ? path : join(realAsFar(parent), basename(path))
}

/**
 * Where a project's worktrees go: its --worktree-root, or beside it (`DIR.worktrees/`). Never in
 * KITH_HOME: an agent working there would touch Kith's state on every call (each one a card
 * warning of it, which teaches people to wave that warning through), and sit beside the keys.
 * Nor in the project itself, where the project's own status would list them.
 */
export function worktreeRoot(home: string, project: Project): string {
  const root = realAsFar(project.worktreeRoot ?? `${project.dir}.worktrees`)
  if (within(realAsFar(home), root))
    throw new KithError(
      'invalid',
      `${root} is inside KITH_HOME: worktrees go beside the project or under --worktree-root DIR elsewhere`,
    )
  if (within(project.dir, root))
    throw new KithError(
      'invalid',
      `${root} is inside the project ${project.dir}: give a --worktree-root outside it`,
    )
  return root
}

const projectsFile = 'projects.json'

export function listProjects(home: string): Project[] {
  const path = join(home, projectsFile)
  if (!existsSync(path)) return []
  let data: unknown
  try {
    data = JSON.parse(readFileSync(path, 'utf8'))
  } catch (cause) {
    throw new KithError('invalid', `${path} is not JSON: fix or remove it`, { cause })
  }
  const list = (data as { projects?: unknown }).projects
  if (!Array.isArray(list)) throw new KithError('invalid', `${path} holds no project list`)
  return (list as Project[]).filter(
    (p) =>
      typeof p.name === 'string' &&
      typeof p.dir === 'string' &&
      typeof p.worktrees === 'boolean' &&
      (p.worktreeRoot === undefined || typeof p.worktreeRoot === 'string'),
  )
}

function save(home: string, projects: Project[]): void {
  writeFileSync(join(home, projectsFile), `${JSON.stringify({ projects }, null, 2)}\n`, {
    mode: 0o600,
  })
}

/**
 * Adds (or changes) a project; `--worktrees` needs a git repository, and `root` (where worktrees
 * go) needs `--worktrees` and a place outside KITH_HOME and the project.
 */
export function addProject(
  home: string,
  name: string,
  dir: string,
  worktrees: boolean,
  root?: string,
): Project {
  if (!isProjectName(name))
    throw new KithError('usage', `${JSON.stringify(name)} is not a project name (a-z, 0-9, _ . -)`)
  if (!existsSync(dir) || !statSync(dir).isDirectory())
    throw new KithError('not-found', `${dir} is not a directory`)
  const real = realpathSync(dir)
  if (worktrees && !isGitRepo(real))
    throw new KithError('invalid', `${real} is not a git repository: --worktrees needs one`)
  if (root !== undefined && !worktrees)
    throw new KithError('usage', '--worktree-root is where worktrees go: it needs --worktrees')
  const project: Project = {
    name,
    dir: real,
    worktrees,
    ...(root === undefined ? {} : { worktreeRoot: resolve(root) }),
  }
  if (worktrees) worktreeRoot(home, project)
  save(home, [...listProjects(home).filter((p) => p.name !== name), project])
  return project
}

export function removeProject(home: string, name: string): void {
  const projects = listProjects(home)
  if (!projects.some((p) => p.name === name))
    throw new KithError('not-found', `no project ${name} on this machine (kith project list)`)
  save(
    home,
    projects.filter((p) => p.name !== name),
  )
}

/** Where a session asked to start: its directory, and its worktree when one was made. */
export interface StartPlace {
  cwd: string
  project: string
  worktree?: { path: string; branch: string }
}

/**
 * Resolves a session start against this machine's projects: the project's directory, or a new
 * git worktree of it on a new branch (`kith/AGENT-ID`, under worktreeRoot: never in KITH_HOME). Throws
 * KithError with the reason for anything the host does not allow. Idempotent for one `id`: a
 * worktree already made for it (a restart before the session began) is used again.
 */
export function prepareStart(
  home: string,
  agent: string,
  start: SessionStart,
  id: string,
  /** At most this many worktrees of this agent's (a new one past it is refused). */
  maxWorktrees: number,
): StartPlace {
  const projects = listProjects(home)
  const project = projects.find((p) => p.name === start.project)
  // Named to nobody: the refusal is posted in the channel, and the host's projects are its own.
  if (project === undefined)
    throw new KithError(
      'restricted',
      `${start.project} is not a project this machine lets agents start in (its owner lists them: kith project list)`,
    )
  if (start.worktree !== true) return { cwd: project.dir, project: project.name }
  if (!project.worktrees)
    throw new KithError(
      'restricted',
      `project ${project.name} does not allow worktrees (kith project add ${project.name} DIR --worktrees)`,
    )
  const short = `${agent}-${id.slice(0, 8)}`
  const path = join(worktreeRoot(home, project), short)
  const branch = `kith/${short}`
  if (!existsSync(path)) {
    const made = worktreesOf(home, agent)
    if (made >= maxWorktrees)
      throw new KithError(
        'restricted',
        `${agent} has ${made} worktree${made === 1 ? '' : 's'}, its cap of ${maxWorktrees} (its owner may remove some: kith session close ID, or raise it: kith agent set ${agent} --max-worktrees N)`,
        { reason: 'limit' },
      )
    addWorktree(project.dir, path, branch)
  }
  return { cwd: path, project: project.name, worktree: { path, branch } }
}

/** How many worktrees made for `agent`'s sessions are on disk (kept ones included). */
export function worktreesOf(home: string, agent: string): number {
  // AGENT-ID (8 hex): not another agent's whose name starts with this one's.
  const mine = new RegExp(`^${agent}-[0-9a-f]{8}$`)
  let n = 0
  for (const project of listProjects(home)) {
    if (!project.worktrees) continue
    let root: string
    try {
      root = worktreeRoot(home, project)
    } catch (err) {
      // A project whose root is refused holds no worktree of ours to count.
      if (err instanceof KithError) continue
      throw err
    }
    if (!existsSync(root)) continue
    n += readdirSync(root).filter((d) => mine.test(d)).length
  }
  return n
}
