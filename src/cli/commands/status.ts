import { KithError } from '../../errors.js'
import { resolveKithHome } from '../../identity/home.js'
import { loadIdentity } from '../../identity/keys.js'
import type { LinkStatus } from '../../node/daemon.js'
import { NodeStore } from '../../store/node-store.js'
import { parseCommandArgs } from '../args.js'
import type { Out } from '../io.js'
import { npub } from '../key-text.js'
import { connectDaemon } from './chat-common.js'

export const statusHelp = `Usage: kith status [--json]

The node's state: whether kith up runs, each hub with its connection state, lag (ping round
trip) and catch-up cursor, the outbox depth (events not yet answered by a hub) and recent
refusals with the hub's reason.`

interface Status {
  running: boolean
  device: string
  name: string
  embeddedHub: string | null
  removed?: string | null
  hubs: LinkStatus[]
  outbox: number
  agents?: {
    name: string
    state: string
    queue: number
    crashes: number
    adapter: { name?: string; version?: string }
  }[]
  refused: { event: string; hub: string; message: string }[]
}

export async function runStatus(argv: string[], out: Out): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    argv,
    { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    statusHelp,
  )
  if (values.help) {
    out.line(statusHelp)
    return 0
  }
  if (positionals.length > 0) throw new KithError('usage', 'kith status takes no arguments')
  let status: Status
  const daemon = await connectDaemon()
  if (daemon !== undefined) {
    try {
      status = { running: true, ...(await daemon.request<Omit<Status, 'running'>>('status')) }
    } finally {
      daemon.close()
    }
  } else {
    const id = loadIdentity(resolveKithHome())
    const store = new NodeStore(id.home)
    try {
      const cursors = new Map(store.cursors().map((c) => [c.hub, c.since]))
      status = {
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
      }
    } finally {
      store.close()
    }
  }
  if (values.json) {
    out.json({ ...status, device: npub(status.device) })
    return 0
  }
  out.line(`node    ${status.running ? 'running' : 'not running (start it with kith up)'}`)
  out.line(`device  ${status.name} ${npub(status.device)}`)
  if (status.embeddedHub) out.line(`hub     embedded on ${status.embeddedHub}`)
  if (typeof status.removed === 'string') {
    out.line(`removed this device is no longer a member of the fleet (${status.removed})`)
  }
  for (const h of status.hubs) {
    const cursor = h.cursor === null ? 'none yet' : new Date(h.cursor * 1000).toISOString()
    const lag = h.lagMs === null ? '' : `, lag ${h.lagMs} ms`
    out.line(
      `  ${h.url}  ${h.state}${lag}, cursor ${cursor}, outbox ${h.outbox}${h.lastError ? `, last error: ${h.lastError}` : ''}`,
    )
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
  for (const r of status.refused.slice(0, 5))
    out.line(`refused ${r.event.slice(0, 12)}… by ${r.hub}: ${r.message}`)
  return 0
}
