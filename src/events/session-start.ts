import { invalid } from './agent-event-parts.js'
import type { NostrEvent } from './event.js'

/**
 * What a top-level chat message (kind 9) that mentions an agent may add to start its session
 * somewhere chosen (kith-agents, "Sessions"): `["project", NAME]` (one of the hosting node's
 * projects: its directory), `["worktree"]` (a new git worktree of it, on a new branch), and the
 * session's `["mode", ID]` and `["model", ID]`.
 */
export interface SessionStart {
  project: string
  worktree?: boolean
  mode?: string
  model?: string
}

const projectPattern = /^[a-z0-9][a-z0-9_.-]{0,63}$/

/** Whether `name` can name a project (as a channel name: lowercase, digits, `_ . -`). */
export function isProjectName(name: string): boolean {
  return projectPattern.test(name)
}

export function sessionStartTags(start: SessionStart): string[][] {
  if (!isProjectName(start.project))
    throw invalid('bad-tags', `not a project name: ${JSON.stringify(start.project)}`)
  const tags: string[][] = [['project', start.project]]
  if (start.worktree === true) tags.push(['worktree'])
  if (start.mode !== undefined) tags.push(['mode', start.mode])
  if (start.model !== undefined) tags.push(['model', start.model])
  return tags
}

/**
 * The session start a message asks for, or undefined (no `project` tag). Throws
 * KithError('invalid', reason `bad-tags`) for a malformed one (several projects, a bad name,
 * an empty mode or model).
 */
export function parseSessionStart(event: Pick<NostrEvent, 'tags'>): SessionStart | undefined {
  const projects = event.tags.filter((t) => t[0] === 'project')
  if (projects.length === 0) return undefined
  const project = projects[0]?.[1]
  if (projects.length > 1 || project === undefined || !isProjectName(project))
    throw invalid('bad-tags', 'a session start names one project by its name')
  const one = (name: string): string | undefined => {
    const values = event.tags.filter((t) => t[0] === name)
    if (values.length === 0) return undefined
    const v = values[0]?.[1]
    if (values.length > 1 || v === undefined || v === '')
      throw invalid('bad-tags', `a session start has at most one ${name}, with a value`)
    return v
  }
  const mode = one('mode')
  const model = one('model')
  return {
    project,
    ...(event.tags.some((t) => t[0] === 'worktree') ? { worktree: true } : {}),
    ...(mode === undefined ? {} : { mode }),
    ...(model === undefined ? {} : { model }),
  }
}

/** A session start given as a plain object (the control socket's `send`), checked. */
export function sessionStartOf(value: unknown): SessionStart {
  const v = value as Record<string, unknown> | null
  const optStr = (x: unknown) => x === undefined || (typeof x === 'string' && x !== '')
  if (
    typeof v !== 'object' ||
    v === null ||
    typeof v.project !== 'string' ||
    !optStr(v.mode) ||
    !optStr(v.model) ||
    (v.worktree !== undefined && typeof v.worktree !== 'boolean')
  )
    throw invalid('bad-content', 'a session start is { project, worktree?, mode?, model? }')
  return {
    project: v.project,
    ...(v.worktree === true ? { worktree: true } : {}),
    ...(typeof v.mode === 'string' ? { mode: v.mode } : {}),
    ...(typeof v.model === 'string' ? { model: v.model } : {}),
  }
}
