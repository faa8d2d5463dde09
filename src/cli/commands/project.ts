import { KithError } from '../../errors.js'
import { resolveKithHome } from '../../identity/home.js'
import { addProject, listProjects, removeProject } from '../../node/projects.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'

export const projectCommand = declare({
  name: 'project',
  summary: 'the directories agents on this machine may be started in from other devices',
  usage: [
    'kith project add NAME DIR [--worktrees]',
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
    json: { type: 'boolean', description: 'machine-readable output' },
  },
  about: `A device may start an agent's session on this machine only in one of its projects: kith session
new AGENT --project NAME names it, and anything else is refused with the reason. With
--worktrees a session may ask for a git worktree of its own (in KITH_HOME/worktrees/NAME/, on a
new branch kith/AGENT-ID); closing the session removes it unless asked to keep it, and never
while it has uncommitted changes. Kept in KITH_HOME/projects.json; the running node reads it at
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
      throw new KithError('usage', 'kith project add NAME DIR [--worktrees]')
    const p = addProject(home, name, dir, values.worktrees === true)
    out.line(
      `project ${p.name}: ${p.dir}${p.worktrees ? ' (sessions may ask for a worktree)' : ''}`,
    )
    return 0
  }
  if (sub === 'list') {
    const projects = listProjects(home)
    if (values.json === true) out.json({ projects })
    else if (projects.length === 0) out.line('no projects (kith project add NAME DIR)')
    else
      for (const p of projects) out.line(`${p.name}  ${p.dir}${p.worktrees ? '  (worktrees)' : ''}`)
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
