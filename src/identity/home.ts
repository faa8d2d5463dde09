import { chmodSync, mkdirSync, statSync } from 'node:fs'
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { KithError } from '../errors.js'

/** Where a node keeps all its state: `$KITH_HOME`, else `~/.kith`. */
export function resolveKithHome(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.KITH_HOME
  if (fromEnv !== undefined && fromEnv.trim() !== '') return resolve(fromEnv)
  return join(homedir(), '.kith')
}

/** Creates KITH_HOME as 0700 if missing; tightens an existing one that others can enter. */
export function ensureKithHome(home: string): void {
  try {
    mkdirSync(home, { recursive: true, mode: 0o700 })
    const mode = statSync(home).mode & 0o777
    if ((mode & 0o077) !== 0) chmodSync(home, 0o700)
  } catch (cause) {
    throw new KithError('io', `cannot create KITH_HOME at ${home}`, { cause })
  }
}

/**
 * The layout of KITH_HOME, declared here only (every other module names its files through this):
 *
 *   owner.key, device.key      this person's and this machine's keys (0600)
 *   config.json                name, owner, fleet, hubs (no secrets)
 *   node.db                    the node's events, outbox, cursors, sessions, prompt journal
 *   hub.db                     the embedded hub's events (also `kith hub` without --db)
 *   node.sock                  the running node's control socket (0600)
 *   vapid.key                  the P-256 key that signs this node's Web Push requests (0600)
 *   pairing-failures.json      recent failed pairings, for the lockout
 *   agents/NAME.{json,key,log,pid}   each hosted agent's record, key, log and process id
 */
export const homeFiles = {
  ownerKey: 'owner.key',
  deviceKey: 'device.key',
  config: 'config.json',
  nodeDb: 'node.db',
  hubDb: 'hub.db',
  /** A standalone hub's own key (0600), for replicating with its peers (kith hub --peer). */
  hubKey: 'hub.key',
  /** This node's VAPID key (P-256, 0600): it signs Web Push requests (kith-notify). */
  vapidKey: 'vapid.key',
  /** The running node's control socket (0600): CLI commands talk to `kith up` through it. */
  controlSocket: 'node.sock',
  /** Failed pairings of the last 15 minutes (pairing/lockout.ts). */
  pairingFailures: 'pairing-failures.json',
  /** The folder of hosted agents' files (0700); see agentFile. */
  agents: 'agents',
} as const

/** What each of an agent's files in KITH_HOME/agents/ ends with. */
export const agentFileSuffixes = {
  record: '.json',
  key: '.key',
  log: '.log',
  pid: '.pid',
} as const

/** The path of one of agent `name`'s files: KITH_HOME/agents/NAME.{json,key,log,pid}. */
export function agentFile(
  home: string,
  name: string,
  what: keyof typeof agentFileSuffixes,
): string {
  return join(home, homeFiles.agents, `${name}${agentFileSuffixes[what]}`)
}
