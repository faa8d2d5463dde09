import type { PermissionsMode } from '../../acp/permission-policy.js'
import type { AgentPolicy } from '../../grants/policy.js'
import { listAgentRecords } from '../../identity/agents.js'
import type { FleetNode } from '../../node/fleet.js'
import { NodeStore } from '../../store/node-store.js'
import type { Out } from '../io.js'
import { npub } from '../key-text.js'
import { connectDaemon } from './chat-common.js'

/** What a running node says about one of its agents (`status` over the control socket). */
interface LiveAgent {
  name: string
  state: string
  queue: number
  crashes: number
  sessions?: number
  adapter: { name?: string; version?: string }
}

export interface AgentRow {
  name: string
  npub: string
  /** The grant's state: active, or why not (revoked, expired, …). */
  status: string
  grant: string
  /** The ACP command, or null for a key only. */
  command: string[] | null
  cwd: string | null
  /** owner, fleet, or the listed keys as npubs. */
  allow: string | string[] | null
  approvers: string | string[] | null
  permissions: PermissionsMode | null
  /** Process state under kith up: idle, working, crashed, …; `not running` without kith up. */
  state: string | null
  adapter: { name?: string; version?: string } | null
  queue: number | null
  crashes: number | null
  /** Channels with a session kept for resuming. */
  sessions: number | null
}

/** The running node's view of its agents, by name; empty when kith up is not running. */
async function liveAgents(): Promise<Map<string, LiveAgent> | undefined> {
  const daemon = await connectDaemon()
  if (daemon === undefined) return undefined
  try {
    const status = await daemon.request<{ agents?: LiveAgent[] }>('status')
    return new Map((status.agents ?? []).map((a) => [a.name, a]))
  } finally {
    daemon.close()
  }
}

export async function agentRows(node: FleetNode, now: number): Promise<AgentRow[]> {
  const records = listAgentRecords(node.id.home)
  const live = await liveAgents()
  // Without kith up, session counts come from node.db itself.
  const store = live === undefined && records.length > 0 ? new NodeStore(node.id.home) : undefined
  try {
    return records.map((a) => {
      const d = node.book.authorize(a.pubkey, now)
      const l = live?.get(a.name)
      const hosted = a.command !== undefined
      return {
        name: a.name,
        npub: npub(a.pubkey),
        status: d.ok ? 'active' : d.code,
        grant: a.grant,
        command: a.command ?? null,
        cwd: a.cwd ?? null,
        allow: hosted ? policyText(a.allow) : null,
        approvers: hosted ? policyText(a.approvers) : null,
        permissions: hosted ? (a.permissions ?? 'ask') : null,
        state: !hosted ? null : (l?.state ?? (live === undefined ? 'not running' : 'not loaded')),
        adapter: l?.adapter ?? null,
        queue: l?.queue ?? null,
        crashes: l?.crashes ?? null,
        sessions: !hosted ? null : (l?.sessions ?? store?.agentSessionCount(a.pubkey) ?? null),
      }
    })
  } finally {
    store?.close()
  }
}

/** `kith agent list`: one line per agent (or `--json`). */
export async function listAgents(
  node: FleetNode,
  now: number,
  json: boolean,
  out: Out,
): Promise<number> {
  const rows = await agentRows(node, now)
  if (json) {
    out.json({ agents: rows })
    return 0
  }
  if (rows.length === 0) out.line('no agents on this node: kith agent add NAME')
  for (const r of rows) {
    out.line(`${r.name.padEnd(16)} ${r.npub}  ${r.status}`)
    if (r.command === null) {
      out.line('  a key only (no command to run)')
      continue
    }
    const adapter = r.adapter?.name
      ? ` (${r.adapter.name}${r.adapter.version ? ` ${r.adapter.version}` : ''})`
      : ''
    const live =
      r.queue === null ? '' : `, queue ${r.queue}${r.crashes ? `, ${r.crashes} crash(es)` : ''}`
    out.line(
      `  ${r.state ?? ''}${adapter}${live}, ${r.sessions ?? 0} session(s), permissions ${r.permissions ?? 'ask'}, prompts from ${listed(r.allow)}, approvals from ${listed(r.approvers)}`,
    )
    out.line(`  runs ${r.command.join(' ')} in ${r.cwd ?? '?'}`)
  }
  return 0
}

function policyText(p: AgentPolicy | undefined): string | string[] {
  const policy = p ?? 'owner'
  return typeof policy === 'string' ? policy : policy.map(npub)
}

function listed(p: string | string[] | null): string {
  if (p === null) return 'owner'
  return typeof p === 'string' ? p : `owner, ${p.join(', ')}`
}
