import type { PromptJob } from '../acp/host.js'
import { sessionKey } from '../acp/session-key.js'
import { KithError } from '../errors.js'
import { boundPrompts } from '../events/agent-binding.js'
import { isInterrupt } from '../events/chat.js'
import type { NostrEvent } from '../events/event.js'
import { parseSessionStart } from '../events/session-start.js'
import type { HostedAgent, NodeContext } from './node-context.js'
import { defaultMaxSessions, defaultMaxWorktrees } from '../identity/agents.js'
import { prepareStart, type StartPlace } from './projects.js'
import { threadFor } from './session-threads.js'

/** Where a prompt runs: its session's place, and for a new one where and how it starts. */
export interface Route {
  place: { channel: string; thread?: string }
  /** A session start the host allowed (a project, a worktree, a mode and model). */
  start?: { at: StartPlace; mode?: string; model?: string }
  /** The job's fields that say where and how its session starts. */
  job: Pick<PromptJob, 'channel' | 'thread' | 'cwd' | 'describe' | 'settings'>
}

/**
 * The session a prompt goes to (session-threads.ts; an interrupt: the session whose running
 * turn it names) and, for a top-level message that asks for a project, where the host lets it
 * start (projects.ts). Throws KithError (its reason for the person) when the host refuses.
 */
export function routePrompt(
  node: NodeContext,
  agent: HostedAgent,
  event: NostrEvent,
  channel: string,
  resumed: boolean,
): Route {
  const pubkey = agent.record.pubkey
  // An interrupt is sent top-level, as the message that says "stop that and do this".
  const interrupted =
    !resumed && isInterrupt(event)
      ? agent.host.runningInChannel(channel).find((j) => boundPrompts(event).has(j.prompt ?? ''))
      : undefined
  const thread =
    interrupted !== undefined
      ? interrupted.thread
      : threadFor(
          event,
          (t) =>
            agent.host.knows({ channel, thread: t }) ||
            node.store.agentSession(pubkey, { channel, thread: t }) !== undefined,
        )
  const place = { channel, ...(thread === undefined ? {} : { thread }) }
  const asked = thread === event.id ? parseSessionStart(event) : undefined
  const isNew = !agent.host.knows(place) && node.store.agentSession(pubkey, place) === undefined
  if (isNew && !resumed) checkSessionCap(node, agent)
  const start =
    asked === undefined
      ? undefined
      : {
          at: prepareStart(
            node.id.home,
            agent.record.name,
            asked,
            event.id,
            agent.record.maxWorktrees ?? defaultMaxWorktrees,
          ),
          ...(asked.mode === undefined ? {} : { mode: asked.mode }),
          ...(asked.model === undefined ? {} : { model: asked.model }),
        }
  // A thread's later session (its first could not be resumed) starts where the first did.
  const cwd = start === undefined ? node.store.agentSession(pubkey, place)?.cwd : start.at.cwd
  const settings =
    start === undefined || (start.mode === undefined && start.model === undefined)
      ? undefined
      : {
          ...(start.mode === undefined ? {} : { mode: start.mode }),
          ...(start.model === undefined ? {} : { model: start.model }),
        }
  return {
    place,
    ...(start === undefined ? {} : { start }),
    job: {
      ...place,
      ...(cwd === undefined ? {} : { cwd }),
      ...(start === undefined
        ? {}
        : {
            describe: {
              project: start.at.project,
              ...(start.at.worktree === undefined ? {} : { worktree: start.at.worktree }),
            },
          }),
      ...(settings === undefined ? {} : { settings }),
    },
  }
}

/**
 * A new session past the agent's cap of open sessions (those kept in node.db and those the host
 * is opening now) is refused, naming the cap (KithError `restricted`, reason `limit`).
 */
function checkSessionCap(node: NodeContext, agent: HostedAgent): void {
  const pubkey = agent.record.pubkey
  const open = agent.host.knownPlaces()
  for (const r of node.store.sessions.all())
    if (r.agent === pubkey && r.closedAt === undefined)
      open.add(sessionKey({ channel: r.channel, thread: r.thread }))
  const cap = agent.record.maxSessions ?? defaultMaxSessions
  if (open.size < cap) return
  const name = agent.record.name
  throw new KithError(
    'restricted',
    `${name} has ${open.size} open sessions, its cap of ${cap} (its owner may close some: kith session close ID, or raise it: kith agent set ${name} --max-sessions N)`,
    { reason: 'limit' },
  )
}
