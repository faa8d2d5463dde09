import { readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { KithError } from '../errors.js'
import { isHex64 } from '../events/event.js'
import { normalizeRelayUrl } from '../events/nip42.js'
import { homeFiles } from './home.js'

/** What `KITH_HOME/config.json` holds. No secrets. */
export interface KithConfig {
  version: 1
  /** This machine's name in the fleet. */
  name: string
  /** The owner pubkey (hex) this device belongs to, also on devices without the owner key. */
  owner?: string
  /** The fleet (its founder's pubkey) whose grants this node follows. */
  fleet?: string
  /** Hub URLs, normalised, in the order added. */
  hubs: string[]
  /**
   * The fleet's display name on this machine (kith fleet name): local and unsigned, shown in
   * status and on pairing screens; absent: the fleet is shown by its founder's name.
   */
  fleetName?: string
}

export function parseConfig(value: unknown, path: string): KithConfig {
  const v = value as Partial<KithConfig> | null
  if (typeof v !== 'object' || v === null || v.version !== 1) {
    throw new KithError('config', `${path}: not a kith config (version 1)`)
  }
  if (typeof v.name !== 'string' || !Array.isArray(v.hubs)) {
    throw new KithError('config', `${path}: name and hubs are required`)
  }
  if (v.owner !== undefined && !isHex64(v.owner)) {
    throw new KithError('config', `${path}: owner must be a hex pubkey`)
  }
  if (v.fleet !== undefined && !isHex64(v.fleet)) {
    throw new KithError('config', `${path}: fleet must be a hex pubkey`)
  }
  if (v.fleetName !== undefined && typeof v.fleetName !== 'string') {
    throw new KithError('config', `${path}: fleetName must be a string`)
  }
  const hubs = v.hubs.map((h) => {
    if (typeof h !== 'string') throw new KithError('config', `${path}: hubs must be URLs`)
    return normalizeRelayUrl(h)
  })
  return {
    version: 1,
    name: v.name,
    hubs,
    ...(v.owner === undefined ? {} : { owner: v.owner }),
    ...(v.fleet === undefined ? {} : { fleet: v.fleet }),
    ...(v.fleetName === undefined ? {} : { fleetName: v.fleetName }),
  }
}

export function readConfig(home: string): KithConfig | undefined {
  const path = join(home, homeFiles.config)
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new KithError('io', `cannot read ${path}`, { cause: err })
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (cause) {
    throw new KithError('config', `${path} is not valid JSON; fix or remove it`, { cause })
  }
  return parseConfig(json, path)
}

/** Writes the config atomically (temp file + rename), so a crash never leaves half a file. */
export function writeConfig(home: string, config: KithConfig): void {
  const path = join(home, homeFiles.config)
  const tmp = `${path}.tmp`
  writeFileSync(tmp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 })
  renameSync(tmp, path)
}
