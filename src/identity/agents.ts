import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { generateSecretKey } from 'nostr-tools/pure'
import { KithError } from '../errors.js'
import type { AgentPolicy } from '../grants/policy.js'
import { parseQuorum, type Quorum } from '../events/agent-policy.js'
import { isHex64, publicKeyOf } from '../events/event.js'
import { agentFile, agentFileSuffixes, homeFiles } from './home.js'
import { readKeyFile, writeKeyFile } from './key-file.js'
import type { PermissionsMode } from './permissions-mode.js'

/** An agent hosted by this node. Its key lives in agents/NAME.key (0600); the agent never sees it. */
export interface AgentRecord {
  name: string
  pubkey: string
  /** The id of the grant that admitted it. */
  grant: string
  /**
   * NIP-OA tags signed by the grant's issuer, one per kind the agent may publish (each bounded by
   * the grant's effective window); each event carries the one that holds for it (authTagFor).
   */
  authTags?: string[][]
  /** Records written before authTags: one tag, attached only where it holds. */
  authTag?: string[]
  createdAt: number
  /** The ACP command (argv, no shell) this node spawns for it; absent: a key only. */
  command?: string[]
  /** Working directory of the agent's sessions. */
  cwd?: string
  /** Who may prompt it (default: its owner's devices only). */
  allow?: AgentPolicy
  /** Who may answer its permission requests and cancel its turns (default: its owner). */
  approvers?: AgentPolicy
  /** Environment variables passed through from kith up's environment (API keys and the like). */
  env?: string[]
  /** Which tool calls the node allows without asking a person; absent: `ask` (none). */
  permissions?: PermissionsMode
  /**
   * N distinct people must allow a card of these ACP tool kinds before its call runs (kith agent
   * add/set --quorum N --for KINDS); absent: one approver is enough.
   */
  quorum?: Quorum
  /** At most this many open sessions (absent: `defaultMaxSessions`); a new one past it is refused. */
  maxSessions?: number
  /** At most this many git worktrees made for its sessions (absent: `defaultMaxWorktrees`). */
  maxWorktrees?: number
}

/**
 * Every top-level mention is a new session, and every worktree start a full checkout: bounded
 * per agent, so a member allowed to prompt cannot exhaust the host (kith agent add/set
 * --max-sessions, --max-worktrees).
 */
export const defaultMaxSessions = 32
export const defaultMaxWorktrees = 8

const namePattern = /^[a-z0-9][a-z0-9_-]{0,31}$/

export function checkAgentName(name: string): void {
  if (!namePattern.test(name)) {
    throw new KithError(
      'usage',
      `agent names are 1-32 lowercase letters, digits, - or _, starting with a letter or digit (got ${JSON.stringify(name)})`,
    )
  }
}

function agentsDir(home: string): string {
  const dir = join(home, homeFiles.agents)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  return dir
}

/** Creates the agent's key (never overwriting one) and returns its secret and pubkey. */
export function createAgentKey(home: string, name: string): { secret: Uint8Array; pubkey: string } {
  checkAgentName(name)
  const secret = generateSecretKey()
  try {
    agentsDir(home)
    writeKeyFile(agentFile(home, name, 'key'), secret)
  } catch (err) {
    if (err instanceof KithError && err.code === 'key-exists') {
      throw new KithError('key-exists', `an agent named ${name} already exists on this node`, {
        cause: err,
      })
    }
    throw err
  }
  return { secret, pubkey: publicKeyOf(secret) }
}

export function readAgentSecret(home: string, name: string): Uint8Array | undefined {
  agentsDir(home)
  return readKeyFile(agentFile(home, name, 'key'))
}

export function writeAgentRecord(home: string, record: AgentRecord): void {
  agentsDir(home)
  const path = agentFile(home, record.name, 'record')
  writeFileSync(`${path}.tmp`, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 })
  renameSync(`${path}.tmp`, path)
}

/** The NIP-OA tags an agent record holds (old records: their single tag). */
export function authTagsOf(record: AgentRecord): string[][] {
  return record.authTags ?? (record.authTag === undefined ? [] : [record.authTag])
}

export function listAgentRecords(home: string): AgentRecord[] {
  const dir = agentsDir(home)
  const records: AgentRecord[] = []
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith(agentFileSuffixes.record)) continue
    const path = join(dir, file)
    let value: AgentRecord
    try {
      value = JSON.parse(readFileSync(path, 'utf8')) as AgentRecord
    } catch (cause) {
      throw new KithError('config', `${path} is not valid JSON; fix or remove it`, { cause })
    }
    if (typeof value.name !== 'string' || !isHex64(value.pubkey) || !isHex64(value.grant)) {
      throw new KithError('config', `${path} is not an agent record`)
    }
    try {
      // Its quorum is checked as the wire's is: a hand-edited record cannot widen it.
      const quorum = parseQuorum(value.quorum, `${path}`)
      if (quorum === undefined) delete value.quorum
      else value.quorum = quorum
    } catch (cause) {
      if (!(cause instanceof KithError)) throw cause
      throw new KithError('config', cause.message, { cause })
    }
    records.push(value)
  }
  return records
}

/**
 * Forgets an agent on this node: its record, its key file, its log and pid file. Its grant and
 * revocation stay in node.db (and on the hubs): forgetting is not un-revoking.
 */
export function removeAgentFiles(home: string, name: string): void {
  checkAgentName(name)
  agentsDir(home)
  for (const what of Object.keys(agentFileSuffixes) as (keyof typeof agentFileSuffixes)[])
    rmSync(agentFile(home, name, what), { force: true })
}
