import { fleetPeople, type Person } from '../../grants/members.js'
import { ChannelSync } from '../../node/channel-sync.js'
import type { DeviceStatus } from '../../node/node-status.js'
import { ago } from './status.js'
import { nowSeconds, openNode } from './fleet-common.js'

/**
 * `/who` in chat: who reads the channel (the whole fleet, or a private channel's members), each
 * person with their devices (presence as this node hears it) and the agents on them.
 */
export async function whoIsIn(
  channel: string,
  devices: readonly DeviceStatus[],
): Promise<string[]> {
  // Read only: opened and closed here, without telling the node that grants changed.
  const node = openNode()
  try {
    const now = nowSeconds()
    // This node's own copy of the channel's definition: no hub is asked from inside chat.
    const sync = await ChannelSync.open(node, [], now, { '#d': [channel] })
    let def
    try {
      def = sync.book.definitions(now).find((d) => d.channel === channel)
    } finally {
      sync.close()
    }
    const people = fleetPeople(node.book.verifier, now).filter(
      (p) => p.status === 'active' && (def?.private !== true || def.members.includes(p.pubkey)),
    )
    return whoLines(channel, def?.private === true, people, devices, node.id.ownerPubkey)
  } finally {
    node.book.close()
  }
}

/** The lines of /who, from the people who read the channel and the devices' presence. */
export function whoLines(
  channel: string,
  isPrivate: boolean,
  people: readonly Person[],
  devices: readonly DeviceStatus[],
  me: string | undefined,
): string[] {
  const presence = new Map(devices.map((d) => [d.pubkey, d]))
  const lines = [
    `#${channel}: ${isPrivate ? `private, ${people.length} ${people.length === 1 ? 'person' : 'people'}` : 'open to the whole fleet'}`,
  ]
  for (const p of people) {
    lines.push(
      `  ${p.name || (p.role === 'founder' ? 'founder' : '-')}${p.pubkey === me ? ' (you)' : ''}`,
    )
    for (const d of p.devices.filter((x) => x.status === 'active')) {
      const live = presence.get(d.pubkey)
      const seen =
        live === undefined || live.presence === 'unknown'
          ? 'not heard from'
          : live.self
            ? 'online (this device)'
            : `${live.presence} (heard ${ago(live.lastSeenSeconds ?? 0)} ago)`
      const agents = live?.agents ?? d.agents.map((a) => ({ name: a.name, state: '' }))
      const list = agents.map((a) => `@${a.name}${a.state === '' ? '' : ` ${a.state}`}`).join(', ')
      lines.push(`    ${live?.name ?? d.name}: ${seen}${list === '' ? '' : `; agents ${list}`}`)
    }
  }
  return lines
}
