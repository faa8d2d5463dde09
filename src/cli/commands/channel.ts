import { KithError } from '../../errors.js'
import { parseChannel } from '../../events/chat.js'
import { makeChannelDefinition, type ChannelDefinition } from '../../events/channel-def.js'
import { signEvent } from '../../events/event.js'
import { channelRefusal } from '../../grants/channels.js'
import { ChannelSync, type ChannelHubReport } from '../../node/channel-sync.js'
import type { FleetNode } from '../../node/fleet.js'
import { parseCommandArgs } from '../args.js'
import type { Out } from '../io.js'
import { npub, parsePubkeyText } from '../key-text.js'
import { connectDaemon } from './chat-common.js'
import { describeKey, nowSeconds, withNode } from './fleet-common.js'

export const channelHelp = `Usage:
  kith channel create '#name' [--private --members NPUB,NPUB…] [--about TEXT] [--json]
  kith channel list [--json] [--offline]
  kith channel members '#name' [--json] [--offline]

Channels are open to the whole fleet by default. create --private makes one whose messages the
hubs deliver only to its members: the people (owner keys) listed with --members, each with all
of their devices and agents. You are always a member of what you define. Running create again
on the same channel replaces its definition (the member list is the whole new list): anyone
taken off stops receiving at once, anyone added sees the history. Without --private, create
makes the channel open again (or records you as its creator).

A channel definition is signed by your owner key, so run create on the machine that holds it.
Who may change a channel: its creator, the fleet's founder and admins. Definitions and
messages of a private channel are hidden from everyone else, who cannot post in it either.
They are not encrypted: anyone who runs a hub of the fleet can read them.

list and members ask the configured hubs (or the running node's embedded hub); --offline
answers from this node's copy.`

/** The hubs a channel command talks to: the configured ones, else the running node's own. */
async function channelHubs(node: FleetNode): Promise<string[]> {
  if (node.id.config.hubs.length > 0) return node.id.config.hubs
  const daemon = await connectDaemon()
  if (daemon === undefined) return []
  try {
    const status = await daemon.request<{ embeddedHub: string | null }>('status')
    return status.embeddedHub === null ? [] : [status.embeddedHub]
  } finally {
    daemon.close()
  }
}

function parseMembers(text: string | undefined): string[] {
  if (text === undefined) return []
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  if (items.length === 0) throw new KithError('usage', '--members needs at least one npub')
  return items.map((m) => parsePubkeyText(m, `member ${m}`))
}

export async function runChannel(argv: string[], out: Out): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    argv,
    {
      private: { type: 'boolean' },
      members: { type: 'string' },
      about: { type: 'string' },
      json: { type: 'boolean' },
      offline: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    channelHelp,
  )
  const [sub, name, ...extra] = positionals
  if (values.help || sub === undefined) {
    out.line(channelHelp)
    return values.help ? 0 : 2
  }
  if (sub !== 'create' && sub !== 'list' && sub !== 'members') {
    throw new KithError('usage', `unknown channel command ${JSON.stringify(sub)}\n\n${channelHelp}`)
  }
  if (extra.length > 0 || (sub === 'list') !== (name === undefined)) {
    throw new KithError(
      'usage',
      `kith channel ${sub} takes ${sub === 'list' ? 'no arguments' : "one '#name'"}\n\n${channelHelp}`,
    )
  }
  const channel = name === undefined ? undefined : parseChannel(name)
  if (sub !== 'create' && (values.private || values.members !== undefined || values.about)) {
    throw new KithError('usage', `--private, --members and --about belong to kith channel create`)
  }
  if (sub === 'create' && values.members !== undefined && !values.private) {
    throw new KithError('usage', '--members lists who may read a --private channel; add --private')
  }
  const members = parseMembers(values.members)
  const json = values.json ?? false
  return withNode(async (node) => {
    const now = nowSeconds()
    if (sub === 'create' && node.id.ownerSecret === undefined) {
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
      if (sub === 'create') {
        return await create(node, sync, channel!, members, values, now, out, json)
      }
      const defs = sync.book
        .definitions()
        .filter((d) => channel === undefined || d.channel === channel)
      if (sub === 'list') return list(node, defs, out, json)
      return showMembers(node, channel!, defs[0], out, json)
    } finally {
      sync.close()
    }
  })
}

async function create(
  node: FleetNode,
  sync: ChannelSync,
  channel: string,
  members: string[],
  values: { private?: boolean | undefined; about?: string | undefined },
  now: number,
  out: Out,
  json: boolean,
): Promise<number> {
  const owner = node.id.ownerPubkey!
  for (const m of members) {
    if (!sync.book.isPerson(m, now)) {
      throw new KithError(
        'usage',
        `${npub(m)} is not a person of this fleet: --members takes owner keys (each covers its ` +
          'devices and agents), not device or agent keys',
      )
    }
  }
  const current = sync.book.definition(channel)
  const isPrivate = values.private ?? false
  const event = signEvent(
    makeChannelDefinition(
      {
        channel,
        fleet: node.fleet,
        creator: current?.creator ?? owner,
        private: isPrivate,
        members: isPrivate ? [owner, ...members] : [],
        about: values.about ?? current?.about ?? '',
      },
      // A replacement must be newer than the definition in effect.
      Math.max(now, (current?.createdAt ?? 0) + 1),
    ),
    node.id.ownerSecret!,
  )
  // Checked here as every hub will check it, so a refusal is explained before anything is sent.
  const local = sync.book.add(event, { now })
  if (local.status === 'rejected') throw channelRefusal(local)
  const def = sync.book.definition(channel)!
  const reports = await sync.publish(event, now)
  if (json) {
    out.json({ ...describe(node, def), id: event.id, hubs: reports })
    return exitFor(reports)
  }
  out.line(
    isPrivate
      ? `#${channel} is private: ${def.members.length} member${def.members.length === 1 ? '' : 's'}`
      : `#${channel} is open to the whole fleet`,
  )
  for (const m of def.members) out.line(`  ${describeKey(node, m)}`)
  for (const line of describeHubs(reports)) out.line(line)
  return exitFor(reports)
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

function describeHubs(reports: readonly ChannelHubReport[]): string[] {
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
