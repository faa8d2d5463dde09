import { KithError } from '../../errors.js'
import { parseChannel } from '../../events/chat.js'
import { makeChannelDefinition, type ChannelDefinition } from '../../events/channel-def.js'
import { signEvent, type NostrEvent } from '../../events/event.js'
import { channelRefusal } from '../../grants/channels.js'
import { fleetPeople } from '../../grants/members.js'
import { ChannelSync, type ChannelHubReport } from '../../node/channel-sync.js'
import type { FleetNode } from '../../node/fleet.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { npub, parsePubkeyText } from '../key-text.js'
import { describeKey, nowSeconds, resolveTarget, withNode, type KeyRow } from './fleet-common.js'
import { connectNode } from '../control-client.js'

export const channelCommand = declare({
  name: 'channel',
  summary: 'create a private channel (--private --members), list channels',
  usage: [
    "kith channel create '#name' [--private --members NPUB,NPUB…] [--about TEXT] [--json]",
    "kith channel set '#name' [--private|--open] [--members NPUB,NPUB…] [--about TEXT]\n                   [--creator NAME|NPUB] [--json]",
    'kith channel list [--json] [--offline]',
    "kith channel members '#name' [--json] [--offline]",
  ],
  subcommands: {
    create: 'define a channel (open, or --private with --members)',
    set: 'change a channel definition, keeping what you do not give',
    list: 'the channels of this fleet',
    members: "a channel's members",
  },
  options: {
    private: { type: 'boolean', description: '(create, set) only its members receive it' },
    open: { type: 'boolean', description: '(set) open to the whole fleet again' },
    members: {
      type: 'string',
      value: 'NPUB,NPUB…',
      description: '(create, set) the whole member list',
    },
    about: { type: 'string', value: 'TEXT', description: '(create, set) what the channel is for' },
    creator: {
      type: 'string',
      value: 'NAME|NPUB',
      description: '(set; founder and admins) who may change the channel from now on',
    },
    json: { type: 'boolean', description: 'machine-readable output' },
    offline: { type: 'boolean', description: "(list, members) answer from this node's copy" },
  },
  about: `Channels are open to the whole fleet by default. create --private makes one whose messages the
hubs deliver only to its members: the people (owner keys) listed with --members, each with all
of their devices and agents. You are always a member of what you create. Running create again
on the same channel replaces its definition (the member list is the whole new list): anyone
taken off stops receiving at once, anyone added sees the history. Without --private, create
makes the channel open again (or records you as its creator).

set changes the definition in effect and keeps whatever you do not give: --private or --open,
--members (the whole new list; you are not added), --about. --creator, for the founder and
admins, names the person who may change the channel from now on: the repair when someone
defined a channel that was not theirs. A channel someone else already posted in is defined only
by the founder or an admin.

A channel definition is signed by your owner key, so run create and set on the machine that
holds it. Who may change a channel: its creator, the fleet's founder and admins. Definitions and
messages of a private channel are hidden from everyone else, who cannot post in it either.
They are not encrypted: anyone who runs a hub of the fleet can read them.

list and members ask the configured hubs (or the running node's embedded hub); --offline
answers from this node's copy.`,
})

/** The hubs a channel command talks to: the configured ones, else the running node's own. */
export async function channelHubs(node: FleetNode): Promise<string[]> {
  if (node.id.config.hubs.length > 0) return node.id.config.hubs
  const daemon = await connectNode()
  if (daemon === undefined) return []
  try {
    const status = await daemon.request('status')
    return status.embeddedHub === null ? [] : [status.embeddedHub]
  } finally {
    daemon.close()
  }
}

function parseMembers(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  if (items.length === 0) throw new KithError('usage', '--members needs at least one npub')
  return items.map((m) => parsePubkeyText(m, `member ${m}`))
}

interface ChannelValues {
  private?: boolean | undefined
  open?: boolean | undefined
  members?: string | undefined
  about?: string | undefined
  creator?: string | undefined
}

export async function runChannel(argv: string[], out: Out): Promise<number> {
  const parsed = channelCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  const [sub, name, ...extra] = positionals
  if (extra.length > 0 || (sub === 'list') !== (name === undefined)) {
    throw new KithError(
      'usage',
      `kith channel ${sub} takes ${sub === 'list' ? 'no arguments' : "one '#name'"}\n\n${channelCommand.help()}`,
    )
  }
  const channel = name === undefined ? undefined : parseChannel(name)
  const writes = sub === 'create' || sub === 'set'
  if (
    !writes &&
    (values.private || values.open || values.members !== undefined || values.about !== undefined)
  ) {
    throw new KithError('usage', `--private, --open, --members and --about belong to create or set`)
  }
  if (sub !== 'set' && (values.open || values.creator !== undefined)) {
    throw new KithError('usage', '--open and --creator belong to kith channel set')
  }
  if (values.private && values.open) {
    throw new KithError('usage', '--private and --open contradict each other; give one')
  }
  if (sub === 'create' && values.members !== undefined && !values.private) {
    throw new KithError('usage', '--members lists who may read a --private channel; add --private')
  }
  if (sub === 'set' && values.members !== undefined && values.open) {
    throw new KithError(
      'usage',
      '--members lists who may read a private channel, not an --open one',
    )
  }
  const members = parseMembers(values.members)
  const json = values.json ?? false
  return withNode(async (node) => {
    const now = nowSeconds()
    if (writes && node.id.ownerSecret === undefined) {
      throw new KithError(
        'restricted',
        'channels are defined by an owner key: run this on the machine that holds yours',
      )
    }
    const hubs = values.offline ? [] : await channelHubs(node)
    const filter = channel === undefined ? {} : { '#d': [channel] }
    const sync = await ChannelSync.open(node, hubs, now, filter)
    try {
      for (const r of sync.unreached) out.err(`${r.url}: ${r.message}`)
      for (const i of sync.ignored) {
        out.err(
          `${i.url}: ignored a definition of #${i.channel} that fails the rules (${i.message})`,
        )
      }
      if (writes) return await write(node, sync, sub, channel!, members, values, now, out, json)
      const defs = sync.book
        .definitions(now)
        .filter((d) => channel === undefined || d.channel === channel)
      if (sub === 'list') return list(node, defs, out, json)
      return showMembers(node, channel!, defs[0], out, json)
    } finally {
      sync.close()
    }
  })
}

/** The people of the fleet as rows for NAME|NPUB lookups: the founder and every owner. */
function personRows(node: FleetNode, now: number): KeyRow[] {
  return fleetPeople(node.book.verifier, now).map((p) => ({
    name: p.role === 'founder' ? 'founder' : p.name,
    pubkey: p.pubkey,
    npub: npub(p.pubkey),
    role: 'owner',
    status: p.status,
    issuer: p.admittedBy ?? '',
    deleg: p.admin,
    grant: '',
  }))
}

async function write(
  node: FleetNode,
  sync: ChannelSync,
  sub: 'create' | 'set',
  channel: string,
  members: string[] | undefined,
  values: ChannelValues,
  now: number,
  out: Out,
  json: boolean,
): Promise<number> {
  const owner = node.id.ownerPubkey!
  for (const m of members ?? []) {
    if (!sync.book.isPerson(m, now)) {
      throw new KithError(
        'usage',
        `${npub(m)} is not a person of this fleet: --members takes owner keys (each covers its ` +
          'devices and agents), not device or agent keys',
      )
    }
  }
  const state = sync.book.state(channel, now)
  const current = state.definition
  let creator = state.creator ?? owner
  if (values.creator !== undefined) {
    const row = resolveTarget(
      values.creator,
      personRows(node, now),
      'person',
      'kith fleet members',
      // A flag's value naming no one is a usage error, as --members' is.
      'usage',
    )
    creator = typeof row === 'string' ? row : row.pubkey
    if (!sync.book.isPerson(creator, now)) {
      throw new KithError('usage', `--creator ${values.creator} is not a person of this fleet`)
    }
  }
  let isPrivate: boolean
  let list: string[]
  if (sub === 'create') {
    isPrivate = values.private ?? false
    list = isPrivate ? [owner, ...(members ?? [])] : []
  } else {
    isPrivate = values.private ? true : values.open ? false : (current?.private ?? false)
    list = isPrivate ? (members ?? current?.members ?? []) : []
  }
  const event = signEvent(
    makeChannelDefinition(
      {
        channel,
        fleet: node.fleet,
        creator,
        private: isPrivate,
        members: list,
        about: values.about ?? current?.about ?? '',
      },
      // A replacement must be newer than the definition in effect.
      Math.max(now, (current?.createdAt ?? 0) + 1),
    ),
    node.id.ownerSecret!,
  )
  return publishDefinition(node, sync, event, now, out, json)
}

/**
 * Checks `event` here as every hub will (a refusal is explained before anything is sent), then
 * publishes it and reports what it made of the channel.
 */
async function publishDefinition(
  node: FleetNode,
  sync: ChannelSync,
  event: NostrEvent,
  now: number,
  out: Out,
  json: boolean,
): Promise<number> {
  const local = sync.book.add(event, { now })
  if (local.status === 'rejected') throw channelRefusal(local)
  const def = sync.book.definition(event.tags.find((t) => t[0] === 'd')![1]!, now)!
  const reports = await sync.publish(event, now)
  if (json) {
    out.json({ ...describe(node, def), id: event.id, hubs: reports })
    return exitFor(reports)
  }
  out.line(
    def.private
      ? `#${def.channel} is private: ${def.members.length} member${def.members.length === 1 ? '' : 's'}`
      : `#${def.channel} is open to the whole fleet`,
  )
  for (const m of def.members) out.line(`  ${describeKey(node, m)}`)
  if (def.creator !== node.id.ownerPubkey) {
    out.line(`  creator: ${nameOf(node, def.creator) || npub(def.creator)}`)
  }
  for (const line of describeHubs(reports)) out.line(line)
  return exitFor(reports)
}

export interface Resigned {
  channel: string
  id: string
  hubs: ChannelHubReport[]
}

/**
 * After `removed` lost their place in the fleet (a revocation dated `revokedAt`): re-signs, with
 * this node's owner key, the definition in effect of every channel the removed person created or
 * signed the definition of (every defined channel, when they were an admin), so it stays exactly
 * as it is. Without it the removed person could still back-date a definition to before their
 * removal and change those channels (kith-channels, "Removal"). Channels already re-signed at or
 * after the removal by someone else are left alone.
 */
export async function resignChannelsOf(
  node: FleetNode,
  removed: string,
  revokedAt: number,
  out: Out,
): Promise<{ resigned: Resigned[]; failed: string[] }> {
  const hubs = await channelHubs(node)
  const sync = await ChannelSync.open(node, hubs, revokedAt)
  const resigned: Resigned[] = []
  const failed: string[] = []
  try {
    const wasAdmin = node.book.verifier
      .grantsOf(removed)
      .some((e) => e.grant.role === 'owner' && e.grant.deleg)
    for (const def of sync.book.definitions(revokedAt)) {
      const state = sync.book.state(def.channel, revokedAt)
      const theirs = wasAdmin || state.creator === removed || def.author === removed
      // A definition signed after the removal by someone else already outdates whatever the
      // removed owner could back-date; after an admin's removal, only a new authority
      // definition pins the creator, so those channels are always re-signed.
      const outdated = !wasAdmin && def.author !== removed && def.createdAt >= revokedAt
      if (!theirs || outdated) continue
      const event = signEvent(
        makeChannelDefinition(
          {
            channel: def.channel,
            fleet: node.fleet,
            creator: state.creator ?? def.creator,
            private: def.private,
            members: def.members,
            about: def.about,
          },
          Math.max(revokedAt, def.createdAt + 1),
        ),
        node.id.ownerSecret!,
      )
      const local = sync.book.add(event, { now: revokedAt })
      if (local.status === 'rejected') {
        failed.push(`#${def.channel}: could not re-sign it (${local.code}: ${local.reason})`)
        continue
      }
      resigned.push({
        channel: def.channel,
        id: event.id,
        hubs: await sync.publish(event, revokedAt),
      })
    }
  } finally {
    sync.close()
  }
  for (const f of failed) out.err(f)
  return { resigned, failed }
}

function describe(node: FleetNode, d: ChannelDefinition) {
  return {
    channel: d.channel,
    private: d.private,
    creator: npub(d.creator),
    members: d.members.map((m) => ({ npub: npub(m), name: nameOf(node, m) })),
    about: d.about,
    updatedAt: d.createdAt,
  }
}

function nameOf(node: FleetNode, pubkey: string): string {
  if (pubkey === node.fleet) return 'founder'
  return node.book.verifier.allGrants().find((g) => g.subject === pubkey)?.name ?? ''
}

function list(node: FleetNode, defs: ChannelDefinition[], out: Out, json: boolean): number {
  if (json) {
    out.json({ channels: defs.map((d) => describe(node, d)) })
    return 0
  }
  if (defs.length === 0) {
    out.line('no channel definitions visible to you: every other channel is open to the fleet')
  }
  for (const d of defs) {
    const access = d.private ? `private, ${d.members.length} members` : 'open'
    out.line(
      `#${d.channel.padEnd(20)} ${access.padEnd(22)} created by ${nameOf(node, d.creator) || npub(d.creator)}`,
    )
  }
  return 0
}

function showMembers(
  node: FleetNode,
  channel: string,
  def: ChannelDefinition | undefined,
  out: Out,
  json: boolean,
): number {
  if (json) {
    out.json(def === undefined ? { channel, private: false, members: null } : describe(node, def))
    return 0
  }
  if (def === undefined) {
    // A private channel's definition is hidden from non-members, so absence proves nothing.
    out.line(
      `#${channel} has no definition visible to you: it is open to the whole fleet, unless it ` +
        'is private and you are not a member',
    )
    return 0
  }
  if (!def.private) {
    out.line(`#${channel} is open to the whole fleet`)
    return 0
  }
  for (const m of def.members) out.line(describeKey(node, m))
  return 0
}

export function describeHubs(reports: readonly ChannelHubReport[]): string[] {
  if (reports.length === 0) {
    return ['no hub reached: kept in node.db, published when kith up next links to a hub']
  }
  return reports.map((r) =>
    r.ok ? `${r.url}: accepted${r.message ? ` (${r.message})` : ''}` : `${r.url}: ${r.message}`,
  )
}

function exitFor(reports: readonly ChannelHubReport[]): number {
  return reports.every((r) => r.ok) ? 0 : 1
}

/** What the command index loads. */
export { channelCommand as command, runChannel as run }
