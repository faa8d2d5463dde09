import type { PermissionsMode } from '../../acp/auto-allow.js'
import type { AgentPolicy } from '../../grants/policy.js'
import { listAgentRecords } from '../../identity/agents.js'
import type { FleetNode } from '../../node/fleet.js'
import type { NodeStore } from '../../store/node-store.js'
import { withStore } from '../local-node.js'
import type { Out } from '../io.js'
import { npub } from '../key-text.js'
import type { DeviceStatus } from '../../node/node-status.js'
import { Names } from '../../grants/names.js'
import { keyRows } from './fleet-common.js'
import { connectNode } from '../control-client.js'

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
  const daemon = await connectNode()
  if (daemon === undefined) return undefined
  try {
    const status = await daemon.request('status')
    return new Map((status.agents ?? []).map((a) => [a.name, a]))
  } finally {
    daemon.close()
  }
}

export async function agentRows(node: FleetNode, now: number): Promise<AgentRow[]> {
  const records = listAgentRecords(node.id.home)
  const live = await liveAgents()
  const rows = (store: NodeStore | undefined) =>
    records.map((a) => {
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
  // Without kith up, session counts come from node.db itself.
  return live === undefined && records.length > 0 ? withStore(node.id.home, rows) : rows(undefined)
}

/**
 * `kith agent list`: one line per agent (or `--json`); agents whose key is no longer granted
 * (revoked, expired) only with `all`.
 */
export async function listAgents(
  node: FleetNode,
  now: number,
  opts: { json: boolean; all: boolean },
  out: Out,
): Promise<number> {
  const every = await agentRows(node, now)
  const rows = opts.all ? every : every.filter((r) => r.status === 'active')
  const hidden = every.length - rows.length
  if (opts.json) {
    out.json({ agents: rows, hidden })
    return 0
  }
  if (every.length === 0) out.line('no agents on this node: kith agent add NAME')
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
  if (hidden > 0)
    out.line(
      `(${hidden} agent${hidden === 1 ? '' : 's'} no longer granted, not shown: kith agent list --all; kith agent rm NAME forgets one)`,
    )
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

/** An agent of the fleet as `kith agent list --fleet` shows it. */
export interface FleetAgentRow {
  name: string
  npub: string
  /** Whose it is, when not this node's own person's. */
  person: string | null
  /** Its grant's state: active, or why not. */
  status: string
  /** The device that reports hosting it (presence), if any is online. */
  host: string | null
  /**
   * Its state as its host reports it (idle, working, awaiting-permission, crashed, …);
   * `not reported` when no online device reports hosting it; null without kith up running.
   */
  state: string | null
}

/**
 * `kith agent list --fleet`: every agent of the fleet (its grants), where each runs and its state
 * from the running node's presence (kith-chat/1), so a laptop sees whether a devbox's agent is
 * idle, working or waiting for a permission answer.
 */
export async function listFleetAgents(
  node: FleetNode,
  now: number,
  opts: { json: boolean; all: boolean },
  out: Out,
): Promise<number> {
  const daemon = await connectNode()
  let devices: DeviceStatus[] | undefined
  if (daemon !== undefined) {
    try {
      devices = (await daemon.request('status')).devices
    } finally {
      daemon.close()
    }
  }
  const every = withStore(node.id.home, (store): FleetAgentRow[] => {
    const names = new Names(node.book.verifier, store.reads, node.id.devicePubkey)
    return keyRows(node, 'agent', now).map((r) => {
      const who = names.who(r.pubkey)
      const host = devices?.find((d) => d.agents.some((a) => a.pubkey === r.pubkey))
      return {
        name: who.name,
        npub: r.npub,
        person: who.mine ? null : (who.person ?? null),
        status: r.status,
        host: host?.name ?? null,
        state:
          devices === undefined
            ? null
            : (host?.agents.find((a) => a.pubkey === r.pubkey)?.state ?? 'not reported'),
      }
    })
  })
  const rows = opts.all ? every : every.filter((r) => r.status === 'active')
  const hidden = every.length - rows.length
  if (opts.json) {
    out.json({ agents: rows, hidden, presence: devices !== undefined })
    return 0
  }
  if (every.length === 0) out.line('no agents in this fleet: kith agent add NAME')
  for (const r of rows) {
    const name = `${r.name}${r.person === null ? '' : ` [agent of ${r.person}]`}`
    const where =
      r.state === null
        ? 'state unknown (kith up is not running here: presence is live)'
        : r.host === null
          ? 'not reported by any online device (its node is down, or does not run it)'
          : `${r.state} on ${r.host}`
    out.line(`${name.padEnd(24)} ${r.status === 'active' ? where : r.status}`)
  }
  if (hidden > 0)
    out.line(
      `(${hidden} agent${hidden === 1 ? '' : 's'} no longer granted, not shown: --all shows them)`,
    )
  return 0
}
