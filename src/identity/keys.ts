import { existsSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { generateSecretKey } from 'nostr-tools/pure'
import { bytesToHex } from '@noble/hashes/utils.js'
import { KithError } from '../errors.js'
import { publicKeyOf } from '../events/event.js'
import { readConfig, writeConfig, type KithConfig } from './config.js'
import { ensureKithHome, homeFiles } from './home.js'
import { readKeyFile, writeKeyFile } from './key-file.js'

export interface Identity {
  home: string
  config: KithConfig
  deviceSecret: Uint8Array
  devicePubkey: string
  /** Present only on the machine that holds the owner key. */
  ownerSecret?: Uint8Array
  ownerPubkey: string | undefined
}

export interface InitResult {
  home: string
  name: string
  fleet: string | undefined
  ownerPubkey: string | undefined
  devicePubkey: string
  ownerKeyHere: boolean
  created: { owner: boolean; device: boolean; config: boolean }
}

function sameKey(a: Uint8Array, b: Uint8Array): boolean {
  return bytesToHex(a) === bytesToHex(b)
}

/**
 * `kith init`: creates what is missing and never overwrites a key. On a person's first machine
 * that means a device key and an owner key; with `ownerSecret` the person brings an existing
 * Nostr identity as owner instead.
 */
export function initIdentity(opts: {
  home: string
  name?: string
  ownerSecret?: Uint8Array
}): InitResult {
  const { home } = opts
  ensureKithHome(home)
  const config = readConfig(home)
  const ownerPath = join(home, homeFiles.ownerKey)
  const devicePath = join(home, homeFiles.deviceKey)
  const created = { owner: false, device: false, config: config === undefined }

  let ownerSecret = readKeyFile(ownerPath)
  if (opts.ownerSecret !== undefined) {
    const given = publicKeyOf(opts.ownerSecret)
    if (ownerSecret !== undefined && !sameKey(ownerSecret, opts.ownerSecret)) {
      throw new KithError(
        'key-mismatch',
        `${ownerPath} already holds a different owner key; it is never overwritten`,
      )
    }
    if (config?.owner !== undefined && config.owner !== given) {
      throw new KithError(
        'key-mismatch',
        'this machine already belongs to another owner; use a fresh KITH_HOME to change owner',
      )
    }
    if (ownerSecret === undefined) {
      writeKeyFile(ownerPath, opts.ownerSecret)
      ownerSecret = opts.ownerSecret
      created.owner = true
    }
  } else if (ownerSecret === undefined && config?.owner === undefined) {
    ownerSecret = generateSecretKey()
    writeKeyFile(ownerPath, ownerSecret)
    created.owner = true
  }

  let deviceSecret = readKeyFile(devicePath)
  if (deviceSecret === undefined) {
    deviceSecret = generateSecretKey()
    writeKeyFile(devicePath, deviceSecret)
    created.device = true
  }

  const ownerPubkey = ownerSecret !== undefined ? publicKeyOf(ownerSecret) : config?.owner
  const name = opts.name ?? config?.name ?? hostname()
  // A person's first machine founds their own fleet; joining another fleet sets it later.
  const fleet = config?.fleet ?? (ownerSecret !== undefined ? ownerPubkey : undefined)
  const next: KithConfig = {
    version: 1,
    name,
    hubs: config?.hubs ?? [],
    ...(ownerPubkey === undefined ? {} : { owner: ownerPubkey }),
    ...(fleet === undefined ? {} : { fleet }),
  }
  if (JSON.stringify(next) !== JSON.stringify(config)) writeConfig(home, next)
  return {
    home,
    name,
    fleet,
    ownerPubkey,
    devicePubkey: publicKeyOf(deviceSecret),
    ownerKeyHere: ownerSecret !== undefined,
    created,
  }
}

/** Loads this machine's keys; refuses insecure key files and an uninitialised KITH_HOME. */
export function loadIdentity(home: string): Identity {
  const config = readConfig(home)
  const deviceSecret = existsSync(home) ? readKeyFile(join(home, homeFiles.deviceKey)) : undefined
  if (config === undefined || deviceSecret === undefined) {
    throw new KithError('not-initialized', `no kith identity in ${home}; run: kith init`)
  }
  const ownerSecret = readKeyFile(join(home, homeFiles.ownerKey))
  const ownerPubkey = ownerSecret !== undefined ? publicKeyOf(ownerSecret) : config.owner
  return {
    home,
    config,
    deviceSecret,
    devicePubkey: publicKeyOf(deviceSecret),
    ...(ownerSecret === undefined ? {} : { ownerSecret }),
    ownerPubkey,
  }
}

/**
 * For `kith join`: a device key (made here if missing) and never an owner key. Refuses a
 * KITH_HOME that already belongs to a fleet or holds an owner key: joining would mix identities.
 */
export function prepareJoiningDevice(home: string): { secret: Uint8Array; pubkey: string } {
  ensureKithHome(home)
  const config = readConfig(home)
  if (config?.fleet !== undefined) {
    throw new KithError(
      'key-exists',
      `${home} already belongs to a fleet; use a fresh KITH_HOME to join another`,
    )
  }
  if (readKeyFile(join(home, homeFiles.ownerKey)) !== undefined) {
    throw new KithError(
      'key-exists',
      `${home} holds an owner key (it is someone's first machine); join from a fresh KITH_HOME`,
    )
  }
  const path = join(home, homeFiles.deviceKey)
  let secret = readKeyFile(path)
  if (secret === undefined) {
    secret = generateSecretKey()
    writeKeyFile(path, secret)
  }
  return { secret, pubkey: publicKeyOf(secret) }
}
