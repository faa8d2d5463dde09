import { userInfo } from 'node:os'
import { KithError } from '../../errors.js'
import { fleetPeople, type MemberKey, type Person } from '../../grants/members.js'
import { readConfig, writeConfig } from '../../identity/config.js'
import { resolveKithHome } from '../../identity/home.js'
import { loadIdentity } from '../../identity/keys.js'
import { ensureOwnDeviceGrant, describeReports, syncHubs } from '../../node/fleet.js'
import { GrantBook, keepSealing } from '../../node/grant-book.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { npub } from '../key-text.js'
import { nowSeconds, resolveTarget, revokeKey, withNode, type KeyRow } from './fleet-common.js'
import { fleetEncrypt } from './fleet-encrypt.js'
import { runInvite } from './invite-flow.js'
import { runJoinExchange } from './join-flow.js'
import { resignAuthorityOf } from './resign.js'
import { grantName } from './join.js'
import { openLocalFleet, withStore } from '../local-node.js'

export const fleetCommand = declare({
  name: 'fleet',
  summary: 'share this fleet with other people: invite, join, members, remove, name',
  usage: [
    `kith fleet invite [--admin] [--name NAME] [--hub URL] [--rearm]
                                  admit another person (their own owner key) into this fleet`,
    `kith fleet join CODE [--name NAME] [--yes]
                                  join the fleet that invited you, with your owner key`,
    `kith fleet members [--json] [--offline]
                                  people, their devices and agents, who admitted whom`,
    `kith fleet remove NAME|NPUB [--json] [--yes]
                                  remove a person: their devices and agents go with them`,
    `kith fleet name [NAME]          show or set the fleet's display name (on this machine)`,
    `kith fleet encrypt [on|off] [--rotate-every PERIOD] [--json]
                                  seal every channel end to end (founder or admin), or show it`,
  ],
  subcommands: {
    invite: 'admit another person into this fleet',
    join: 'join the fleet that invited you',
    members: 'people, their devices and agents',
    remove: 'remove a person with their devices and agents',
    name: "show or set the fleet's display name on this machine",
    encrypt: 'seal every channel end to end, so hubs and relays carry only ciphertext',
  },
  options: {
    admin: {
      type: 'boolean',
      description: '(invite) the new member may invite people too (and remove those below them)',
    },
    name: {
      type: 'string',
      value: 'NAME',
      description:
        '(invite) the name the fleet knows them by (default: the one they propose); (join) the name you propose; both screens show the one taken',
    },
    hub: {
      type: 'string',
      value: 'URL',
      description: '(invite) the hub URL the other person should use, if it differs from yours',
    },
    yes: {
      type: 'boolean',
      description:
        '(join) accepted for scripts (the 6 digits are the one question, always asked); (remove) do not ask for confirmation',
    },
    offline: { type: 'boolean', description: '(members) do not sync grants with the hubs first' },
    rearm: {
      type: 'boolean',
      description: '(invite) clear the lock set after 3 failed pairings in 15 minutes',
    },
    'rotate-every': {
      type: 'string',
      value: 'PERIOD',
      description:
        "(encrypt on) replace each channel's key this often, so one leaked key opens a bounded window: 7d (the default), 12h, 90m; 1h to 365d",
    },
    json: { type: 'boolean', description: 'machine-readable output' },
  },
  about: `A fleet is shared by people who each keep their own owner key and machines. Its founder (or an
admin: a person invited with --admin) runs kith fleet invite, which shows a pairing code; the
other person, who has run kith init on their own laptop, runs kith fleet join CODE there. Both
screens then show the same 6 digits: compare them over a call or a shared screen, and answer y
on both sides. The new member then pairs their own machines with kith pair / kith join.

Removal revokes the person's owner grant: every hub drops their devices' and agents'
connections and refuses their events at once; every node drops their queued prompts. A person
is removed by whoever admitted them, someone above them, or the founder. The channels they
created (every channel, for an admin) are re-signed with your key as they are, so the removed
person can no longer change them. On a terminal it asks first; from a script it needs --yes.`,
})

export async function runFleet(argv: string[], out: Out): Promise<number> {
  const parsed = fleetCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  const [sub, arg, ...extra] = positionals
  const noArgs = (what: string) => {
    if (arg !== undefined) throw new KithError('usage', `kith fleet ${what} takes no arguments`)
  }
  switch (sub) {
    case 'invite':
      noArgs('invite')
      return invite(values, out)
    case 'join':
      if (arg === undefined || extra.length > 0)
        throw new KithError(
          'usage',
          `kith fleet join takes one CODE (or -)\n\n${fleetCommand.help()}`,
        )
      return join(arg, values, out)
    case 'members':
      noArgs('members')
      return members(values, out)
    case 'name':
      if (extra.length > 0)
        throw new KithError('usage', 'kith fleet name takes one NAME (quote a name with spaces)')
      return fleetName(arg, values.json === true, out)
    case 'remove':
      if (arg === undefined || extra.length > 0)
        throw new KithError(
          'usage',
          `kith fleet remove takes one NAME or NPUB\n\n${fleetCommand.help()}`,
        )
      return remove(arg, { json: values.json === true, yes: values.yes === true }, out)
    case 'encrypt':
      if (extra.length > 0) throw new KithError('usage', 'kith fleet encrypt takes on or off')
      return fleetEncrypt(
        arg,
        values.json === true,
        out,
        typeof values['rotate-every'] === 'string' ? values['rotate-every'] : undefined,
      )
    default:
      throw new KithError(
        'usage',
        `unknown fleet command ${JSON.stringify(sub)}\n\n${fleetCommand.help()}`,
      )
  }
}

/**
 * `kith fleet name [NAME]`: the fleet's display name on this machine. It is local and unsigned
 * (config.json), so each machine may name the fleet for itself; without one, screens name the
 * fleet after its founder's machine.
 */
function fleetName(name: string | undefined, json: boolean, out: Out): number {
  const home = resolveKithHome()
  const config = readConfig(home)
  if (config === undefined) {
    throw new KithError('not-initialized', `no kith identity in ${home}: run \`kith init\` first`)
  }
  if (config.fleet === undefined) {
    throw new KithError('not-initialized', 'this machine is in no fleet yet')
  }
  if (name !== undefined) {
    const trimmed = name.trim()
    if (trimmed === '' || trimmed.length > 64 || /[\p{Cc}]/u.test(trimmed)) {
      throw new KithError('usage', 'a fleet name is 1-64 printable characters')
    }
    writeConfig(home, { ...config, fleetName: trimmed })
    config.fleetName = trimmed
  }
  const shown = config.fleetName ?? null
  if (json) out.json({ fleet: npub(config.fleet), name: shown })
  else if (shown === null)
    out.line(`this fleet (${npub(config.fleet)}) has no name here; kith fleet name NAME sets one`)
  else
    out.line(
      `${name === undefined ? 'fleet' : 'named this fleet'} ${shown} (${npub(config.fleet)}; on this machine only)`,
    )
  return 0
}

async function invite(
  values: { admin?: boolean; name?: string; hub?: string; rearm?: boolean },
  out: Out,
): Promise<number> {
  const admin = values.admin === true
  return runInvite(
    {
      role: 'owner',
      command: 'kith fleet invite',
      joinCommand: 'kith fleet join',
      hub: values.hub,
      rearm: values.rearm === true,
      name: values.name,
      check: (node, now) => {
        const me = node.id.ownerPubkey!
        if (me === node.fleet) return
        const grant = node.book.currentGrant(me, now)
        if (grant === undefined || grant.role !== 'owner' || !grant.deleg) {
          throw new KithError(
            'restricted',
            'only the founder or an admin may invite people into this fleet; ask one of them',
          )
        }
      },
      grant: (node, proof, name, ownerSecret, now) => {
        if (proof.device === node.fleet || node.book.authorize(proof.device, now).ok) {
          throw new KithError('restricted', `${npub(proof.device)} is already in this fleet`)
        }
        return node.book.signGrant(
          { subject: proof.device, role: 'owner', deleg: admin, name, proof: proof.consent },
          ownerSecret,
          now,
        )
      },
      done: (proof, name) =>
        `admitted ${name} ${npub(proof.device)} into this fleet${admin ? ' as an admin' : ''}`,
    },
    out,
  )
}

async function join(
  text: string,
  values: { name?: string; yes?: boolean },
  out: Out,
): Promise<number> {
  const home = resolveKithHome()
  const id = loadIdentity(home)
  const ownerSecret = id.ownerSecret
  const ownerPubkey = id.ownerPubkey
  if (ownerSecret === undefined || ownerPubkey === undefined) {
    throw new KithError(
      'restricted',
      'kith fleet join runs on the machine that holds your owner key (the one where you ran kith init first)',
    )
  }
  const proposed = values.name ?? personName()
  const { code, hubs, enrollment } = await runJoinExchange(
    {
      text,
      role: 'owner',
      yes: values.yes === true,
      check: (code) => {
        if (code.owner === ownerPubkey)
          throw new KithError('usage', 'this invitation is your own; give it to the other person')
        if (id.config.fleet !== undefined && id.config.fleet !== ownerPubkey) {
          throw new KithError(
            'restricted',
            `this machine is already in the fleet of ${npub(id.config.fleet)}; a person belongs to one fleet`,
          )
        }
      },
      key: () => ({ pubkey: ownerPubkey, secret: ownerSecret, name: proposed }),
      enroll: (_code, enrollment, hubs) => {
        const book = GrantBook.open(home, enrollment.fleet)
        try {
          book.learn([...enrollment.chain, enrollment.grant])
          keepSealing(book, enrollment)
        } finally {
          book.close()
        }
        const config = readConfig(home)!
        writeConfig(home, { ...config, owner: ownerPubkey, fleet: enrollment.fleet, hubs })
        withStore(home, (store) => store.dropOtherFleets(enrollment.fleet))
      },
    },
    out,
  )
  // This machine becomes the new member's first device in the fleet, granted by their owner key.
  const node = openLocalFleet(loadIdentity(home))
  try {
    const now = nowSeconds()
    const grant = ensureOwnDeviceGrant(node, now)
    const reports = await syncHubs(node, now, (l) => out.err(l))
    // The name the fleet knows this person by: the inviter's choice, in the grant.
    const name = grantName(enrollment.grant) ?? proposed
    out.line(`joined the fleet of ${code.name} (${npub(node.fleet)}) as ${name}`)
    out.line(
      `this machine (${node.id.config.name}) is your device in it${grant === undefined ? '' : ' (granted by your owner key)'}`,
    )
    out.line(`hubs: ${hubs.join(', ')}`)
    for (const l of describeReports(reports)) out.line(`  ${l}`)
    out.line('pair your other machines with kith pair; (re)start this node with kith up')
    return 0
  } finally {
    node.book.close()
  }
}

function personName(): string {
  try {
    return userInfo().username
  } catch (err) {
    // No passwd entry (some containers): fall back to the environment.
    if (!(err instanceof Error)) throw err
    return process.env.USER ?? 'member'
  }
}

async function members(values: { json?: boolean; offline?: boolean }, out: Out): Promise<number> {
  return withNode(async (node) => {
    const now = nowSeconds()
    if (!values.offline) await syncHubs(node, now, (l) => out.err(l))
    const people = fleetPeople(node.book.verifier, now)
    const label = (p: Person) => p.name || (p.role === 'founder' ? 'founder' : '-')
    const nameOf = new Map(people.map((p) => [p.pubkey, label(p)]))
    // A device names itself (kith device rename): its profile's name over its grant's.
    const deviceName = (d: MemberKey) => node.book.profileName(d.pubkey) ?? d.name
    if (values.json) {
      const key = (k: MemberKey) => ({
        name: k.name,
        npub: npub(k.pubkey),
        role: k.role,
        status: k.status,
        admittedBy: k.admittedBy === undefined ? null : npub(k.admittedBy),
      })
      out.json({
        fleet: npub(node.fleet),
        people: people.map((p) => ({
          ...key(p),
          name: label(p),
          admin: p.admin,
          you: p.pubkey === node.id.ownerPubkey,
          devices: p.devices.map((d) => ({
            ...key(d),
            name: deviceName(d),
            agents: d.agents.map(key),
          })),
          agents: p.agents.map(key),
        })),
      })
      return 0
    }
    for (const p of people) {
      const tags = [
        p.role === 'founder' ? 'founder' : p.admin ? 'admin' : 'member',
        ...(p.admittedBy === undefined
          ? []
          : [`admitted by ${nameOf.get(p.admittedBy) ?? npub(p.admittedBy)}`]),
        ...(p.status === 'active' ? [] : [p.status]),
        ...(p.pubkey === node.id.ownerPubkey ? ['you'] : []),
      ]
      out.line(`${label(p)}  ${npub(p.pubkey)}  (${tags.join(', ')})`)
      for (const d of p.devices) {
        out.line(`  device ${(deviceName(d) || '-').padEnd(14)} ${npub(d.pubkey)}  ${d.status}`)
        for (const a of d.agents)
          out.line(`    agent ${(a.name || '-').padEnd(13)} ${npub(a.pubkey)}  ${a.status}`)
      }
      for (const a of p.agents)
        out.line(`  agent ${(a.name || '-').padEnd(15)} ${npub(a.pubkey)}  ${a.status}`)
    }
    return 0
  })
}

async function remove(
  target: string,
  opts: { json: boolean; yes: boolean },
  out: Out,
): Promise<number> {
  return withNode(async (node) => {
    const now = nowSeconds()
    if (node.id.ownerSecret === undefined) {
      throw new KithError(
        'restricted',
        'kith fleet remove runs on the machine that holds your owner key',
      )
    }
    // Learn what the hubs know first, so the cascade printed is the whole of it.
    await syncHubs(node, now, (l) => out.err(l))
    const rows: KeyRow[] = fleetPeople(node.book.verifier, now)
      .filter((p) => p.role === 'owner')
      .map((p) => ({
        name: p.name,
        pubkey: p.pubkey,
        npub: npub(p.pubkey),
        role: 'owner',
        status: p.status,
        issuer: p.admittedBy ?? '',
        deleg: p.admin,
        grant: '',
      }))
    const row = resolveTarget(target, rows, 'member', 'kith fleet members')
    const pubkey = typeof row === 'string' ? row : row.pubkey
    if (pubkey === node.fleet) throw new KithError('usage', 'the founder cannot be removed')
    if (pubkey === node.id.ownerPubkey)
      throw new KithError('usage', 'you cannot remove yourself; ask the founder or an admin')
    if (typeof row === 'string' && !rows.some((r) => r.pubkey === pubkey))
      throw new KithError('not-found', `${npub(pubkey)} is not a member of this fleet`)
    const label = typeof row === 'string' ? npub(pubkey) : `${row.name || 'member'} ${row.npub}`
    try {
      return await revokeKey(node, pubkey, label, out, { ...opts, needHub: true }, (revokedAt) =>
        resignAuthorityOf(node, pubkey, revokedAt, out),
      )
    } catch (err) {
      if (!(err instanceof KithError) || err.reason !== 'no-authority') throw err
      const admittedBy = typeof row === 'string' ? undefined : row.issuer
      const by = fleetPeople(node.book.verifier, now).find((p) => p.pubkey === admittedBy)
      const who =
        admittedBy === undefined || admittedBy === node.fleet
          ? 'only the founder may'
          : `only ${by?.name || npub(admittedBy)} (who admitted them), someone above them, or the founder may`
      throw new KithError('restricted', `you may not remove ${label}: ${who}`, { cause: err })
    }
  })
}

/** What the command index loads. */
export { fleetCommand as command, runFleet as run }
