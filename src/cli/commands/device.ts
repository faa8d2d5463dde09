import { KithError } from '../../errors.js'
import { signEvent } from '../../events/event.js'
import { makeDeviceProfile } from '../../events/profile.js'
import { writeConfig } from '../../identity/config.js'
import { describeReports, syncHubs, type FleetNode } from '../../node/fleet.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { npub } from '../key-text.js'
import {
  describeKey,
  keyRows,
  nowSeconds,
  resolveTarget,
  revokeKey,
  withNode,
} from './fleet-common.js'

export const deviceCommand = declare({
  name: 'device',
  summary: "list or revoke this fleet's devices",
  usage: [
    `kith device list [--json] [--offline] [--all]
                                          devices of this fleet and their state (revoked
                                          ones with --all)`,
    `kith device rename [NAME|NPUB] NEWNAME [--json]
                                          rename this device (run it on the device itself)`,
    'kith device revoke NAME|NPUB [--json] [--yes]  revoke a device key; its agents go with it',
  ],
  subcommands: {
    list: 'devices of this fleet and their state',
    rename: 'rename this device',
    revoke: 'revoke a device key; its agents go with it',
  },
  options: {
    json: { type: 'boolean', description: 'machine-readable output' },
    offline: { type: 'boolean', description: '(list) do not sync grants with the hubs first' },
    all: { type: 'boolean', description: '(list) revoked devices too' },
    yes: { type: 'boolean', description: '(revoke) do not ask for confirmation' },
  },
  about: `A device names itself: kith device rename signs a new kind-0 profile with this device's key and
sends it to the hubs; every list and chat shows that name (over the name it was paired with).

A revocation is signed by the owner key (run it on the machine that holds it), takes effect on
every hub at once (live connections included) and is never undone: re-admit a machine by pairing
it again. On a terminal it asks first; from a script (stdin not a terminal) it needs --yes.
Before listing, grants are synced with the configured hubs (--offline skips that).`,
})

export async function runDevice(argv: string[], out: Out): Promise<number> {
  const parsed = deviceCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  const [sub, target, ...extra] = positionals
  return withNode(async (node) => {
    const now = nowSeconds()
    if (sub === 'list') {
      if (target !== undefined) throw new KithError('usage', 'kith device list takes no arguments')
      if (!values.offline) await syncHubs(node, now, (l) => out.err(l))
      const every = keyRows(node, 'device', now).map((r) => ({
        ...r,
        thisDevice: r.pubkey === node.id.devicePubkey,
      }))
      // Revoked devices stay revoked forever: listed only when asked for.
      const rows = values.all ? every : every.filter((r) => r.status === 'active' || r.thisDevice)
      const hidden = every.length - rows.length
      if (values.json) {
        out.json({
          fleet: npub(node.fleet),
          devices: rows.map((r) => ({ ...r, issuer: npub(r.issuer) })),
          hidden,
        })
        return 0
      }
      if (every.length === 0) out.line('no devices yet: pair one with kith pair')
      for (const r of rows) {
        const me = r.thisDevice ? '  (this device)' : ''
        out.line(
          `${(r.name || '-').padEnd(16)} ${r.npub}  ${r.status}${r.deleg ? ', may grant agents' : ''}${me}`,
        )
      }
      if (hidden > 0)
        out.line(
          `(${hidden} device${hidden === 1 ? '' : 's'} no longer granted, not shown: kith device list --all)`,
        )
      return 0
    }
    if (sub === 'rename') {
      if (target === undefined || extra.length > 1) {
        throw new KithError(
          'usage',
          `kith device rename takes [NAME|NPUB] NEWNAME\n\n${deviceCommand.help()}`,
        )
      }
      const newName = extra.length === 1 ? extra[0]! : target
      if (extra.length === 1) {
        const row = resolveTarget(target, keyRows(node, 'device', now), 'device')
        const pubkey = typeof row === 'string' ? row : row.pubkey
        if (pubkey !== node.id.devicePubkey) {
          const label = typeof row === 'string' ? npub(pubkey) : row.name || row.npub
          throw new KithError(
            'restricted',
            `a device names itself (its own key signs its name): run kith device rename ${newName} on ${label}`,
          )
        }
      }
      return renameThisDevice(node, newName, now, out, values.json === true)
    }
    if (sub === 'revoke') {
      if (target === undefined || extra.length > 0) {
        throw new KithError(
          'usage',
          `kith device revoke takes one NAME or NPUB\n\n${deviceCommand.help()}`,
        )
      }
      if (node.id.ownerSecret === undefined) {
        throw new KithError(
          'restricted',
          'only the owner may revoke devices: run this on the machine that holds the owner key',
        )
      }
      const row = resolveTarget(target, keyRows(node, 'device', now), 'device')
      const pubkey = typeof row === 'string' ? row : row.pubkey
      if (pubkey === node.id.devicePubkey) {
        out.err('note: revoking this very device; it will no longer be admitted by any hub')
      }
      return revokeKey(
        node,
        pubkey,
        typeof row === 'string' ? 'key' : describeKey(node, pubkey),
        out,
        { json: values.json === true, yes: values.yes === true },
      )
    }
    throw new KithError(
      'usage',
      `unknown device command ${JSON.stringify(sub)}\n\n${deviceCommand.help()}`,
    )
  })
}

/** Display names: 1–64 characters, no control characters, not only spaces. */
function checkDeviceName(name: string): string {
  const trimmed = name.trim()
  if (trimmed === '' || [...trimmed].length > 64 || /\p{Cc}/u.test(trimmed)) {
    throw new KithError(
      'usage',
      `a device name is 1-64 characters without control characters (got ${JSON.stringify(name)})`,
    )
  }
  return trimmed
}

/**
 * Renames this device: its config, and a new kind-0 profile signed by its key (queued for every
 * hub and sent now), so every node's lists and chat show the new name.
 */
async function renameThisDevice(
  node: FleetNode,
  requested: string,
  now: number,
  out: Out,
  json: boolean,
): Promise<number> {
  const name = checkDeviceName(requested)
  const previous = node.id.config.name
  writeConfig(node.id.home, { ...node.id.config, name })
  const last = node.book.profile(node.id.devicePubkey)
  // A replaceable event: the newer one wins, so it must be newer than the last, even this second.
  const profile = signEvent(
    makeDeviceProfile(name, Math.max(now, (last?.created_at ?? 0) + 1)),
    node.id.deviceSecret,
  )
  node.book.publishOwn(profile)
  const reports = await syncHubs(node, now, (l) => out.err(l), undefined, [profile])
  if (json) {
    out.json({ name, previous, npub: npub(node.id.devicePubkey), hubs: reports })
    return 0
  }
  out.line(`renamed this device: ${previous} → ${name} (${npub(node.id.devicePubkey)})`)
  for (const l of describeReports(reports)) out.line(`  ${l}`)
  return 0
}

/** What the command index loads. */
export { deviceCommand as command, runDevice as run }
