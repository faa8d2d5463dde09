import { KithError } from '../../errors.js'
import { resolveKithHome } from '../../identity/home.js'
import { addProject, listProjects, removeProject, worktreeRoot } from '../../node/projects.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'

export const projectCommand = declare({
  name: 'project',
  summary: 'the directories agents on this machine may be started in from other devices',
  usage: [
    'kith project add NAME DIR [--worktrees [--worktree-root DIR]]',
    'kith project list [--json]',
    'kith project rm NAME',
  ],
  subcommands: {
    add: 'let sessions start in DIR (kith session new AGENT --project NAME)',
    list: "this machine's projects",
    rm: 'forget a project (its sessions go on)',
  },
  options: {
    worktrees: {
      type: 'boolean',
      description:
        '(add) sessions may ask for a git worktree of their own (kith session new --worktree)',
    },
    'worktree-root': {
      type: 'string',
      value: 'DIR',
      description: '(add) where its worktrees go (default: DIR.worktrees beside the project)',
    },
    json: { type: 'boolean', description: 'machine-readable output' },
  },
  about: `A device may start an agent's session on this machine only in one of its projects: kith session
new AGENT --project NAME names it, and anything else is refused with the reason. With
--worktrees a session may ask for a git worktree of its own (beside the project in DIR.worktrees/,
or under --worktree-root; never in KITH_HOME or in the project), on a new branch kith/AGENT-ID.
Closing the session removes it unless asked to keep it, and never while it holds anything not
committed (changed, untracked or ignored files: a .env, build output) unless closed with --force
after seeing the list. Kept in KITH_HOME/projects.json; the running node reads it at
each request.`,
})

export function runProject(argv: string[], out: Out): number {
  const parsed = projectCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  const [sub, name, dir, ...extra] = positionals
  if (extra.length > 0) throw new KithError('usage', `unexpected argument ${extra[0]}`)
  const home = resolveKithHome()
  if (sub === 'add') {
    if (name === undefined || dir === undefined)
      throw new KithError('usage', 'kith project add NAME DIR [--worktrees [--worktree-root DIR]]')
    const p = addProject(home, name, dir, values.worktrees === true, values['worktree-root'])
    out.line(
      `project ${p.name}: ${p.dir}${p.worktrees ? ` (sessions may ask for a worktree, in ${worktreeRoot(home, p)})` : ''}`,
    )
    return 0
  }
  if (sub === 'list') {
    const projects = listProjects(home)
    if (values.json === true) out.json({ projects })
    else if (projects.length === 0) out.line('no projects (kith project add NAME DIR)')
    else
      for (const p of projects)
        out.line(
          `${p.name}  ${p.dir}${p.worktrees ? `  (worktrees in ${worktreeRoot(home, p)})` : ''}`,
        )
    return 0
  }
  if (sub === 'rm') {
    if (name === undefined) throw new KithError('usage', 'kith project rm NAME')
    removeProject(home, name)
    out.line(`project ${name} forgotten`)
    return 0
  }
  throw new KithError(
    'usage',
    `kith project ${sub ?? ''}: not a subcommand\n\n${projectCommand.help()}`,
  )
}

/** What the command index loads. */
export { projectCommand as command, runProject as run }
