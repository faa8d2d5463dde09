import { KithError } from '../../errors.js'
import type { Grant, Role } from '../../grants/grant.js'
import { resolveKithHome } from '../../identity/home.js'
import { loadIdentity } from '../../identity/keys.js'
import { describeReports, syncHubs, type FleetNode, type HubReport } from '../../node/fleet.js'
import type { Out } from '../io.js'
import { askYesNo, closePrompt } from '../prompt.js'
import { npub, parsePubkeyText } from '../key-text.js'
import { openLocalFleet } from '../local-node.js'
import { connectNode } from '../control-client.js'

export const nowSeconds = () => Math.floor(Date.now() / 1000)

export function openNode(): FleetNode {
  return openLocalFleet(loadIdentity(resolveKithHome()))
}

/**
 * Runs `fn` with the node open, always closing its database; then tells a running daemon that
 * grants may have changed, so it enforces and delivers them without a restart.
 */
export async function withNode<T>(fn: (node: FleetNode) => Promise<T> | T): Promise<T> {
  const node = openNode()
  try {
    return await fn(node)
  } finally {
    node.book.close()
    await notifyDaemon()
  }
}

/**
 * Tells a running node (kith up) that this command changed node.db: `grants-changed` (grants and
 * revocations) or `agents-changed` (agent records). True when a node took it; false when none
 * runs, or it is an older one without the method (it picks the change up later: from its hubs,
 * or on its next start).
 */
export async function notifyDaemon(
  method: 'grants-changed' | 'agents-changed' = 'grants-changed',
): Promise<boolean> {
  const daemon = await connectNode()
  if (daemon === undefined) return false
  try {
    await daemon.request(method)
    return true
  } catch (err) {
    if (!(err instanceof KithError)) throw err
    return false
  } finally {
    daemon.close()
  }
}

export interface KeyRow {
  name: string
  pubkey: string
  npub: string
  role: Role
  status: string
  issuer: string
  deleg: boolean
  grant: string
}

/** One row per subject of `role`, from its newest grant, with its status right now. */
export function keyRows(node: FleetNode, role: Role, now: number): KeyRow[] {
  const v = node.book.verifier
  const newest = new Map<string, Grant>()
  for (const g of v.allGrants()) {
    if (g.role !== role) continue
    const prev = newest.get(g.subject)
    if (prev === undefined || g.createdAt >= prev.createdAt) newest.set(g.subject, g)
  }
  return [...newest.values()].map((g) => {
    const d = v.isMember(g.subject, now)
    return {
      // A key's own profile names it (a device renames itself); else the name on its grant.
      name: node.book.profileName(g.subject) ?? g.name ?? '',
      pubkey: g.subject,
      npub: npub(g.subject),
      role,
      status: d.ok ? 'active' : d.code,
      issuer: g.issuer,
      deleg: g.deleg,
      grant: g.id,
    }
  })
}

/**
 * A revocation is never undone, so it is confirmed first: asked on a terminal, and from a script
 * (stdin not a terminal) only given with --yes, so a pipe cannot answer it by accident.
 */
async function confirmRevocation(label: string, yes: boolean): Promise<boolean> {
  if (yes) return true
  if (process.stdin.isTTY !== true) {
    throw new KithError(
      'usage',
      `revoking ${label} cannot be undone: pass --yes to confirm (stdin is not a terminal)`,
    )
  }
  try {
    return await askYesNo(`revoke ${label}, with everything beneath it? This cannot be undone.`)
  } finally {
    closePrompt()
  }
}

/** NAME or NPUB (or hex) → pubkey, among the given rows. */
export function resolveTarget(
  text: string,
  rows: readonly KeyRow[],
  what: string,
  listCommand = `kith ${what} list`,
  code: 'not-found' | 'usage' = 'not-found',
): KeyRow | string {
  if (text.startsWith('npub1') || /^[0-9a-f]{64}$/i.test(text)) {
    const pubkey = parsePubkeyText(text)
    return rows.find((r) => r.pubkey === pubkey) ?? pubkey
  }
  const matches = rows.filter((r) => r.name === text)
  if (matches.length === 1) return matches[0]!
  if (matches.length > 1) {
    throw new KithError(
      'usage',
      `${matches.length} ${what}s are named ${text}; give the npub instead`,
    )
  }
  throw new KithError(code, `no ${what} named ${text}; see ${listCommand}`)
}

/** The key this node signs revocations with: the owner key when here, else the device key. */
export function revokerSecret(node: FleetNode): Uint8Array {
  return node.id.ownerSecret ?? node.id.deviceSecret
}

/** More a command did after a revocation was published, reported with it. */
export interface AfterRevocation {
  json: Record<string, unknown>
  lines: string[]
  ok: boolean
}

/**
 * Revokes `pubkey` (by key), syncs hubs, runs `then` (given the revocation's date), and reports
 * what it revoked, what cascaded and what `then` did.
 */
export async function revokeKey(
  node: FleetNode,
  pubkey: string,
  label: string,
  out: Out,
  opts: { json: boolean; yes: boolean; needHub?: boolean },
  then?: (revokedAt: number) => Promise<AfterRevocation>,
): Promise<number> {
  if (!(await confirmRevocation(label, opts.yes))) {
    out.err(`not revoked: ${label}`)
    return 1
  }
  const json = opts.json
  const now = nowSeconds()
  const before = node.book.members(now)
  const event = node.book.issueRevocation({ keys: [pubkey] }, revokerSecret(node), now)
  const after = node.book.members(now)
  const cascaded = [...before].filter((k) => !after.has(k) && k !== pubkey)
  // A p revocation ends the grants its signer stands above; someone else's grant of the same
  // key (the key consented to both) is theirs to revoke.
  const stillMember = after.has(pubkey)
  const reports = await syncHubs(node, now, (line) => out.err(line))
  const more = await then?.(event.created_at)
  if (json) {
    out.json({
      revoked: npub(pubkey),
      revocation: event.id,
      stillMember,
      cascaded: cascaded.map(npub),
      hubs: reports,
      ...more?.json,
    })
    return 0
  }
  out.line(`revoked ${label}`)
  if (stillMember) {
    out.line(
      '  still a member through a grant you do not stand above: ask whoever issued it, or the founder',
    )
  }
  if (cascaded.length === 0) out.line('nothing beneath it')
  for (const k of cascaded) out.line(`  cascades to ${describeKey(node, k)}`)
  for (const l of describeReports(reports)) out.line(l)
  for (const l of more?.lines ?? []) out.line(l)
  if (opts.needHub === true && !reports.some((r) => r.ok)) {
    // Until a hub holds it, the removed keep working with everyone else: said where it is seen.
    out.err(
      `NOT IN EFFECT YET: no hub has this revocation, so ${label} can still use the fleet. ` +
        `It is kept in node.db: start kith up here (or kith hub add URL of a reachable hub) to publish it.`,
    )
    return 1
  }
  return more?.ok === false ? 1 : exitForReports(reports)
}

export function describeKey(node: FleetNode, pubkey: string): string {
  const g = node.book.verifier.allGrants().find((x) => x.subject === pubkey)
  return g === undefined
    ? npub(pubkey)
    : `${g.role} ${g.name ?? ''} ${npub(pubkey)}`.replace('  ', ' ')
}

/** 0 when every configured hub took the change (or none is configured); 1 when one failed. */
export function exitForReports(reports: readonly HubReport[]): number {
  return reports.every((r) => r.ok && r.refused.length === 0) ? 0 : 1
}
