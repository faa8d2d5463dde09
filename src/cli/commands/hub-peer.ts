import { join } from 'node:path'
import { generateSecretKey } from 'nostr-tools/pure'
import { KithError } from '../../errors.js'
import { publicKeyOf } from '../../events/event.js'
import { signGrantProof, verifyGrantProof } from '../../grants/grant.js'
import { ensureKithHome, homeFiles, resolveKithHome } from '../../identity/home.js'
import { readKeyFile, writeKeyFile } from '../../identity/key-file.js'
import { loadIdentity } from '../../identity/keys.js'
import { describeReports, syncHubs } from '../../node/fleet.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { npub, parsePubkeyText } from '../key-text.js'
import { exitForReports, nowSeconds, withNode } from './fleet-common.js'

export const hubKeyCommand = declare({
  name: 'hub key',
  summary: "this machine's hub key and the grant request the founder signs (kith hub --peer)",
  usage: ['kith hub key [--owner NPUB] [--json]'],
  arity: { min: 0, max: 0, error: 'kith hub key takes no arguments' },
  options: {
    owner: {
      type: 'string',
      value: 'NPUB',
      description: "the fleet's founder (default: the fleet of KITH_HOME)",
    },
    json: { type: 'boolean', description: 'print as JSON' },
  },
  about: `Prints this machine's hub key (KITH_HOME/hub.key, made on first use, mode 0600) and the
grant request the founder needs to let this hub replicate with its peers (kith hub --peer). Give
the request to the founder, who runs: kith hub grant REQUEST`,
})

export const hubGrantCommand = declare({
  name: 'hub grant',
  summary: "admit a hub's key (founder only), so that it may replicate with its peers",
  usage: ['kith hub grant REQUEST [--name NAME] [--json]'],
  arity: { min: 1, max: 1, error: 'kith hub grant takes one REQUEST' },
  options: {
    name: { type: 'string', value: 'NAME', description: 'a display name for the hub' },
    json: { type: 'boolean', description: 'print as JSON' },
  },
  about: `Admits a hub's key to the fleet with the hub role (only the founder may): the hub may then
authenticate to its peers and replicate every event, private channels included. It signs
nothing itself. REQUEST is what \`kith hub key\` printed on the hub's machine. Revoke it as any
key: kith revoke NPUB.`,
})

const requestPattern = /^kith-hub:([0-9a-f]{64}):([0-9a-f]{128})$/

/** The hub key of `home`, made (0600) on first use. */
export function loadOrCreateHubKey(home: string): Uint8Array {
  ensureKithHome(home)
  const path = join(home, homeFiles.hubKey)
  const existing = readKeyFile(path)
  if (existing !== undefined) return existing
  writeKeyFile(path, generateSecretKey())
  return readKeyFile(path)!
}

/**
 * What the founder needs to grant this hub: its key and its consent to the founder's hub grant
 * (the grant proof of kith-grants), so nobody can make a hub of a key they do not hold.
 */
export function hubGrantRequest(hubSecret: Uint8Array, founder: string): string {
  return `kith-hub:${publicKeyOf(hubSecret)}:${signGrantProof(hubSecret, founder, 'hub')}`
}

/** The fleet's founder: `--owner`, else the fleet of KITH_HOME. */
export function founderOf(owner: string | undefined): string {
  if (owner !== undefined) return parsePubkeyText(owner, '--owner')
  const id = loadIdentity(resolveKithHome())
  const fleet = id.config.fleet ?? id.ownerPubkey
  if (fleet === undefined) {
    throw new KithError('not-initialized', 'this machine is in no fleet yet; pass --owner NPUB')
  }
  return fleet
}

export function runHubKey(argv: string[], out: Out): number {
  const parsed = hubKeyCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values } = parsed
  const founder = founderOf(values.owner)
  const sk = loadOrCreateHubKey(resolveKithHome())
  const request = hubGrantRequest(sk, founder)
  if (values.json) {
    out.json({ key: npub(publicKeyOf(sk)), fleet: npub(founder), request })
    return 0
  }
  out.line(`hub key ${npub(publicKeyOf(sk))}`)
  out.line(`on the founder's machine run:`)
  out.line(`  kith hub grant ${request}`)
  return 0
}

export async function runHubGrant(argv: string[], out: Out): Promise<number> {
  const parsed = hubGrantCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  const match = requestPattern.exec(positionals[0]!)
  if (match === null) {
    throw new KithError(
      'usage',
      'a hub grant request looks like kith-hub:<64 hex>:<128 hex>; `kith hub key` prints it',
    )
  }
  const [, subject, proof] = match as unknown as [string, string, string]
  return withNode(async (node) => {
    const ownerSecret = node.id.ownerSecret
    if (ownerSecret === undefined || publicKeyOf(ownerSecret) !== node.fleet) {
      throw new KithError('restricted', 'only the founder may grant a hub key, on their machine')
    }
    if (!verifyGrantProof({ issuer: node.fleet, subject, role: 'hub', proof })) {
      throw new KithError(
        'invalid',
        'this request was made for another fleet (or altered): run kith hub key --owner ' +
          `${npub(node.fleet)} on the hub's machine`,
      )
    }
    const now = nowSeconds()
    const event = node.book.issueGrant(
      { subject, role: 'hub', proof, ...(values.name ? { name: values.name } : {}) },
      ownerSecret,
      now,
    )
    const reports = await syncHubs(node, now, (line) => out.err(line))
    if (values.json) {
      out.json({ granted: npub(subject), role: 'hub', grant: event.id, hubs: reports })
      return 0
    }
    out.line(`granted hub ${npub(subject)}${values.name ? ` (${values.name})` : ''}`)
    for (const l of describeReports(reports)) out.line(l)
    return exitForReports(reports)
  })
}
