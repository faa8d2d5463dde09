import { join } from 'node:path'
import { AgentHost } from '../acp/host.js'
import { reapLeftover } from '../acp/process-group.js'
import { readAgentSecret, type AgentRecord } from '../identity/agents.js'
import type { AgentBridgeOptions } from './agent-bridge.js'
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
  onNewSession: (channel: string, reason: string) => void,
): HostedAgent | undefined {
  const secret = readAgentSecret(node.id.home, record.name)
  if (secret === undefined) {
    node.log(`agent ${record.name}: key file missing; not started`)
    return undefined
  }
  const pidPath = join(node.id.home, 'agents', `${record.name}.pid`)
  const leftover = reapLeftover(pidPath, record.command[0] ?? '')
  if (leftover !== undefined)
    node.log(`agent ${record.name}: stopped its process left from an earlier run (pid ${leftover})`)
  const host = new AgentHost(
    record.name,
    {
      argv: record.command,
      cwd: record.cwd ?? node.id.home,
      logPath: join(node.id.home, 'agents', `${record.name}.log`),
      pidPath,
      ...(record.env === undefined ? {} : { env: record.env }),
    },
    node.log,
    {
      sessions: {
        get: (channel) => node.store.agentSession(record.pubkey, channel),
        set: (channel, session) => node.store.setAgentSession(record.pubkey, channel, session),
      },
      permissions: record.permissions ?? 'ask',
      onNewSession,
      ...(opts.agentIdleTimeoutMs === undefined ? {} : { idleTimeoutMs: opts.agentIdleTimeoutMs }),
      ...(opts.agentTurnCapMs === undefined ? {} : { turnCapMs: opts.agentTurnCapMs }),
    },
  )
  return { record, host, secret }
}
