import { homedir } from 'node:os'
import { AgentHost, type HostOptions, type SessionPlace } from '../acp/host.js'
import { reapLeftover } from '../acp/process-group.js'
import { realPath } from '../acp/real-path.js'
import { secretTouched, type ToolCallView } from '../acp/secret-paths.js'
import { readAgentSecret, type AgentRecord } from '../identity/agents.js'
import { agentFile } from '../identity/home.js'
import type { AgentBridgeOptions } from './agent-options.js'
import type { HostedAgent, NodeContext } from './node-context.js'

/**
 * Makes the host of one agent record (its process is spawned on first use): reads its key,
 * which only ever lives in this process, and first stops a process of it left by an earlier run
 * of this node. undefined when its key file is missing.
 */
export function hostAgent(
  node: NodeContext,
  record: AgentRecord & { command: string[] },
  opts: AgentBridgeOptions,
  onNewSession: (place: SessionPlace, reason: string) => void,
  /** What the agent reports of its sessions (sessions.ts). */
  hooks: Pick<HostOptions, 'onSessionOpened' | 'onSessionInfo'> = {},
): HostedAgent | undefined {
  const secret = readAgentSecret(node.id.home, record.name)
  if (secret === undefined) {
    node.log(`agent ${record.name}: key file missing; not started`)
    return undefined
  }
  const pidPath = agentFile(node.id.home, record.name, 'pid')
  const leftover = reapLeftover(pidPath, record.command[0] ?? '')
  if (leftover !== undefined)
    node.log(`agent ${record.name}: stopped its process left from an earlier run (pid ${leftover})`)
  const cwd = record.cwd ?? node.id.home
  // The agent runs as this node's user, with the same HOME (envAllowlist passes it on).
  const places = { kithHome: node.id.home, home: homedir(), cwd, realpath: realPath }
  const host = new AgentHost(
    record.name,
    {
      argv: record.command,
      cwd,
      logPath: agentFile(node.id.home, record.name, 'log'),
      pidPath,
      ...(record.env === undefined ? {} : { env: record.env }),
    },
    node.log,
    {
      sessions: {
        get: (place) => node.store.agentSession(record.pubkey, place),
        set: (place, session) => node.store.setAgentSession(record.pubkey, place, session),
      },
      permissions: record.permissions ?? 'ask',
      ...(record.quorum === undefined ? {} : { quorum: record.quorum }),
      // A call naming KITH_HOME or another secret place always goes to a person, and says why.
      guard: (ask) => {
        const views: ToolCallView[] = [{ ...ask, kind: ask.toolKind }]
        if (ask.announced !== undefined)
          views.push({
            ...ask.announced,
            kind: ask.announced.kind ?? ask.toolKind,
            title: ask.announced.title ?? '',
          })
        for (const view of views) {
          const why = secretTouched(view, places)
          if (why !== undefined) return why
        }
        return undefined
      },
      onNewSession,
      ...hooks,
      onState: () => node.agentStatesChanged(),
      ...(opts.agentIdleTimeoutMs === undefined ? {} : { idleTimeoutMs: opts.agentIdleTimeoutMs }),
      ...(opts.agentTurnCapMs === undefined ? {} : { turnCapMs: opts.agentTurnCapMs }),
    },
  )
  return { record, host, secret }
}
