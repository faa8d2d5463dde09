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

export const homeFiles = {
  ownerKey: 'owner.key',
  deviceKey: 'device.key',
  config: 'config.json',
  hubDb: 'hub.db',
  /** A standalone hub's own key (0600), for replicating with its peers (kith hub --peer). */
  hubKey: 'hub.key',
  /** The running node's control socket (0600): CLI commands talk to `kith up` through it. */
  controlSocket: 'node.sock',
} as const
