import { readConfig } from '../../identity/config.js'
import { resolveKithHome } from '../../identity/home.js'
import { loadIdentity } from '../../identity/keys.js'
import type { DeviceStatus, LinkStatus } from '../../node/node-status.js'
import { notifyStatus, type TargetStatus } from '../../node/notifications.js'
import { withStore } from '../local-node.js'
import { GrantBook } from '../../node/grant-book.js'
import type { NodeStore } from '../../store/node-store.js'
import { fleetSealingHere } from '../../node/e2e-keys.js'
import { sealingLapse } from '../../grants/e2e-sealing.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { npub } from '../key-text.js'
import { connectNode } from '../control-client.js'

export const statusCommand = declare({
  name: 'status',
  summary: "the node's hubs, lag, cursors, outbox, agents",
  usage: ['kith status [--json]'],
  arity: { min: 0, max: 0, error: 'kith status takes no arguments' },
  options: { json: { type: 'boolean', description: 'print as JSON' } },
  about: `The node's state: whether kith up runs, whether the fleet is sealed end to end
(kith-e2e/1), each hub with its connection state, lag (ping round trip) and catch-up cursor, the
outbox depth (events not yet answered by a hub) and recent refusals with the hub's reason; and,
from the running node's presence (kith-chat/1), every device of the fleet: online, offline (with
when it was last heard from) or unknown (not heard from since kith up started), and the agents
each hosts with their state (idle, working, awaiting-permission, crashed, …).`,
})

interface Status {
  running: boolean
  device: string
  name: string
  embeddedHub: string | null
  web?: string | null
  removed?: string | null
  /** Hubs that say this device is revoked when its own grant book says not; absent: older node. */
  disputedRevocations?: { url: string; message: string }[]
  /** Whether the fleet seals its channels (kith-e2e/1); from an older node, absent. */
  encrypt?: boolean
  /** Why a fleet that sealed does not seal now (kith-e2e/1); null or absent when it is not so. */
  sealLapse?: string | null
  hubs: LinkStatus[]
  outbox: number
  agents?: {
    name: string
    state: string
    queue: number
    crashes: number
    adapter: { name?: string; version?: string }
  }[]
  devices?: DeviceStatus[]
  refused: { event: string; hub: string; message: string }[]
  notify: TargetStatus[]
}

/** "12 s", "5 min", "3 h", "2 d". */
export function ago(seconds: number): string {
  if (seconds < 90) return `${seconds} s`
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min`
  if (seconds < 36 * 3600) return `${Math.round(seconds / 3600)} h`
  return `${Math.round(seconds / 86400)} d`
}

/** One line per notification target, with what failed (kith notify). */
export function notifyLines(targets: readonly TargetStatus[]): string[] {
  return targets.map((t) => {
    const counts = [
      t.pending > 0 ? `${t.pending} waiting` : '',
      t.failed > 0 ? `${t.failed} failed` : '',
      `${t.sent} sent`,
    ]
      .filter((x) => x !== '')
      .join(', ')
    const trouble = t.gone
      ? ` — gone: ${t.lastError ?? 'the endpoint no longer exists'}`
      : t.lastError !== null
        ? ` — last error: ${t.lastError}`
        : ''
    const text = t.fullText ? ' [full text]' : ''
    return `notify  ${t.id} ${t.type} → ${t.where}${text}: ${counts}${trouble}`
  })
}

/** One line per device: its presence and its agents' states. */
export function deviceLines(devices: readonly DeviceStatus[]): string[] {
  return devices.map((d) => {
    const name = `${d.name}${d.person === null ? '' : ` [device of ${d.person}]`}`
    const presence = d.self
      ? 'online (this device)'
      : d.presence === 'unknown'
        ? 'unknown (not heard from since kith up started)'
        : d.presence === 'online'
          ? `online (heard ${ago(d.lastSeenSeconds ?? 0)} ago)`
          : `offline (last heard ${ago(d.lastSeenSeconds ?? 0)} ago)`
    const agents =
      d.agents.length === 0
        ? ''
        : `; agents: ${d.agents.map((a) => `${a.name} ${a.state}`).join(', ')}`
    return `  ${name.padEnd(24)} ${presence}${agents}`
  })
}

export async function runStatus(argv: string[], out: Out): Promise<number> {
  const parsed = statusCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values } = parsed
  let status: Status
  const daemon = await connectNode()
  if (daemon !== undefined) {
    try {
      status = { running: true, ...(await daemon.request('status')) }
    } finally {
      daemon.close()
    }
  } else {
    const id = loadIdentity(resolveKithHome())
    const fleet = id.config.fleet
    status = withStore(id.home, (store) => {
      const cursors = new Map(store.cursors().map((c) => [c.hub, c.since]))
      return {
        running: false,
        device: id.devicePubkey,
        name: id.config.name,
        embeddedHub: null,
        hubs: id.config.hubs.map((url) => ({
          url,
          state: 'not running',
          lagMs: null,
          cursor: cursors.get(url) ?? null,
          outbox: store.pendingFor(url).length,
          lastError: null,
        })),
        outbox: store.outboxSize(),
        refused: store
          .refusals()
          .map((r) => ({ event: r.eventId, hub: r.hub, message: r.message })),
        notify: notifyStatus(store),
        ...(fleet === undefined ? {} : sealingOf(store, fleet)),
      }
    })
  }
  const fleetName = readConfig(resolveKithHome())?.fleetName
  if (values.json) {
    out.json({
      ...status,
      fleetName: fleetName ?? null,
      device: npub(status.device),
      ...(status.devices === undefined
        ? {}
        : {
            devices: status.devices.map((d) => ({
              ...d,
              npub: npub(d.pubkey),
              agents: d.agents.map((a) => ({ ...a, npub: npub(a.pubkey) })),
            })),
          }),
    })
    return 0
  }
  out.line(`node    ${status.running ? 'running' : 'not running (start it with kith up)'}`)
  out.line(`device  ${status.name} ${npub(status.device)}`)
  if (fleetName !== undefined) out.line(`fleet   ${fleetName} (named on this machine)`)
  if (typeof status.sealLapse === 'string')
    out.line(
      `sealed  NO, AND IT WAS: ${status.sealLapse}; hubs read new messages (kith fleet encrypt on to seal again)`,
    )
  else if (status.encrypt !== undefined)
    out.line(
      status.encrypt
        ? 'sealed  yes: hubs and relays carry only ciphertext (kith-e2e/1)'
        : 'sealed  no: hubs can read this fleet (kith fleet encrypt on)',
    )
  if (status.embeddedHub) out.line(`hub     embedded on ${status.embeddedHub}`)
  if (status.web) out.line(`web     ${status.web} (kith open)`)
  if (typeof status.removed === 'string') {
    out.line(`removed this device is no longer a member of the fleet (${status.removed})`)
  }
  for (const d of status.disputedRevocations ?? [])
    out.line(
      `WARNING ${d.url} says this device is revoked (${d.message}), which this node's grants do not show: that link ended, nothing else did`,
    )
  for (const h of status.hubs) {
    const cursor = h.cursor === null ? 'none yet' : new Date(h.cursor * 1000).toISOString()
    const lag = h.lagMs === null ? '' : `, lag ${h.lagMs} ms`
    out.line(
      `  ${h.url}  ${h.state}${lag}, cursor ${cursor}, outbox ${h.outbox}${h.lastError ? `, last error: ${h.lastError}` : ''}`,
    )
    if (h.lastSync) out.line(`    last catch-up ${h.lastSync}`)
  }
  out.line(`outbox  ${status.outbox} waiting`)
  for (const a of status.agents ?? []) {
    const adapter = a.adapter.name
      ? ` (${a.adapter.name}${a.adapter.version ? ` ${a.adapter.version}` : ''})`
      : ''
    out.line(
      `agent   ${a.name}${adapter}: ${a.state}, queue ${a.queue}${a.crashes ? `, ${a.crashes} crash(es)` : ''}`,
    )
  }
  if (status.devices !== undefined) {
    out.line('devices')
    for (const l of deviceLines(status.devices)) out.line(l)
  } else out.line('devices unknown: presence is live, and kith up is not running')
  for (const l of notifyLines(status.notify)) out.line(l)
  for (const r of status.refused.slice(0, 5))
    out.line(`refused ${r.event.slice(0, 12)}… by ${r.hub}: ${r.message}`)
  return 0
}

/** What the command index loads. */
export { statusCommand as command, runStatus as run }

/** Without a node, the setting as node.db knows it (with one, the node's own judgement). */
function sealingOf(
  store: NodeStore,
  fleet: string,
): { encrypt: boolean; sealLapse: string | null } {
  const s = fleetSealingHere(
    store,
    new GrantBook(store.events, fleet),
    fleet,
    Math.floor(Date.now() / 1000),
  )
  return { encrypt: s.on, sealLapse: sealingLapse(s) ?? null }
}
