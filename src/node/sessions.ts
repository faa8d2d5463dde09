import type { SessionReport } from '../acp/agent-process.js'
import type { SessionPlace } from '../acp/session-key.js'
import { signEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import {
  makeSessionState,
  parseSessionState,
  sessionAddress,
  type SessionState,
  type SessionStateSpec,
  type SessionStatus,
} from '../events/session-state.js'
import { KithError } from '../errors.js'
import type { NodeReads } from '../store/node-reads.js'
import type { NodeContext } from './node-context.js'

/** What this node knows of one hosted session beyond node.db: what the agent said of it. */
interface Live {
  status: Exclude<SessionStatus, 'closed'>
  title?: string
  acpSession?: string
  mode?: string
  modes?: { id: string; name: string }[]
  model?: string
  models?: string[]
  options?: SessionStateSpec['options']
  commands?: { name: string; description: string }[]
  usage?: SessionStateSpec['usage']
  /** Where a session starts, known before node.db saves it (its first turn's start). */
  where?: Pick<SessionStateSpec, 'cwd' | 'project' | 'worktree'>
}

/** A session's config options but the model's (shown as its model), as a report lists them. */
function otherOptions(options: unknown[]): NonNullable<SessionStateSpec['options']> {
  return (options as Record<string, unknown>[]).flatMap((o) => {
    if (o.category === 'model' || typeof o.id !== 'string') return []
    const choices = Array.isArray(o.options) ? (o.options as { value?: unknown }[]) : []
    return [
      {
        id: o.id,
        name: typeof o.name === 'string' ? o.name : o.id,
        value: typeof o.currentValue === 'string' ? o.currentValue : String(o.currentValue),
        values: choices.flatMap((c) => (typeof c.value === 'string' ? [c.value] : [])),
      },
    ]
  })
}

/** At most this many session reports are read when listing (the newest). */
const listScan = 5000

/** Every session the fleet reported (kind 34150) that this store holds, newest report of each. */
export function listSessions(reads: NodeReads): SessionState[] {
  const events = reads.events({ kinds: [Kind.SessionState], limit: listScan })
  const newest = new Map<string, SessionState>()
  for (const event of events) {
    let s: SessionState
    try {
      s = parseSessionState(event)
    } catch (err) {
      // A malformed report is left out of the list (it is stored; there is nobody to tell).
      if (err instanceof KithError) continue
      throw err
    }
    const key = `${s.host}:${s.address}`
    const had = newest.get(key)
    if (had === undefined || had.reportedAt < s.reportedAt) newest.set(key, s)
  }
  return [...newest.values()].sort(
    (a, b) => (b.activeAt ?? b.reportedAt) - (a.activeAt ?? a.reportedAt),
  )
}

/** The one session whose short id (or address, or thread root) starts with `id`. */
export function findSession(sessions: readonly SessionState[], id: string): SessionState {
  const want = id.toLowerCase()
  const hits = sessions.filter(
    (s) =>
      s.id.startsWith(want) ||
      s.address === id ||
      (s.thread !== undefined && want.length >= 8 && s.thread.startsWith(want)),
  )
  if (hits.length === 1) return hits[0]!
  if (hits.length === 0)
    throw new KithError('not-found', `no session ${id} is known here (kith session list --all)`)
  throw new KithError(
    'usage',
    `${id} names ${hits.length} sessions (${hits.map((s) => s.id).join(', ')}): give more of it`,
  )
}

/**
 * The sessions of the agents hosted here, reported to the fleet: each change of a session's
 * state (a turn begins or ends, a person is asked, the agent reports commands, a title, usage,
 * a mode) is signed by this device as a kind-34150 event and sent out like any other.
 */
export class SessionReports {
  private readonly live = new Map<string, Live>()
  /** The created_at of the last report of each address: a newer one must be later. */
  private readonly lastAt = new Map<string, number>()

  constructor(private readonly node: NodeContext) {}

  private live_(agent: string, place: SessionPlace): Live {
    const key = sessionAddress(agent, place.channel, place.thread)
    let l = this.live.get(key)
    if (l === undefined) {
      l = { status: 'idle' }
      // After a restart: what the last report said of it (its modes, commands, usage).
      const last = this.lastReport(agent, key)
      if (last !== undefined) {
        this.lastAt.set(key, last.reportedAt)
        if (last.title !== undefined) l.title = last.title
        if (last.acpSession !== undefined) l.acpSession = last.acpSession
        if (last.mode !== undefined) l.mode = last.mode
        if (last.modes !== undefined) l.modes = last.modes
        if (last.model !== undefined) l.model = last.model
        if (last.models !== undefined) l.models = last.models
        if (last.options !== undefined) l.options = last.options
        if (last.commands !== undefined) l.commands = last.commands
        if (last.usage !== undefined) l.usage = last.usage
      }
      this.live.set(key, l)
    }
    return l
  }

  private lastReport(agent: string, address: string): SessionState | undefined {
    const event = this.node.store.reads.newest({
      kinds: [Kind.SessionState],
      authors: [this.node.id.devicePubkey],
      tags: { d: [address] },
    })
    if (event === undefined) return undefined
    try {
      const s = parseSessionState(event)
      return s.agent === agent ? s : undefined
    } catch (err) {
      if (err instanceof KithError) return undefined
      throw err
    }
  }

  /** A session was opened: what a new one reported of its modes and models. */
  opened(agent: string, place: SessionPlace, sessionId: string, report?: SessionReport): void {
    const l = this.live_(agent, place)
    l.acpSession = sessionId
    if (report?.modes) {
      // Its mode is the one it was pinned to (node.db), not the one it reported at first.
      l.modes = report.modes.availableModes.map((m) => ({ id: m.id, name: m.name }))
    }
    if (report?.configOptions) l.options = otherOptions(report.configOptions)
    const option = report?.configOptions?.find((o) => o.category === 'model')
    const options = (option as { options?: { value?: unknown }[] } | undefined)?.options
    if (Array.isArray(options))
      l.models = options.flatMap((o) => (typeof o.value === 'string' ? [o.value] : []))
    const models = (report?.models as { availableModels?: { modelId?: unknown }[] } | undefined)
      ?.availableModels
    if (Array.isArray(models))
      l.models = models.flatMap((m) => (typeof m.modelId === 'string' ? [m.modelId] : []))
  }

  /** An update that describes the session (see agent-process.ts sessionInfoUpdates). */
  info(agent: string, place: SessionPlace, update: unknown): void {
    const u = update as Record<string, unknown>
    const l = this.live_(agent, place)
    switch (u.sessionUpdate) {
      case 'available_commands_update':
        if (Array.isArray(u.availableCommands))
          l.commands = (u.availableCommands as { name?: unknown; description?: unknown }[])
            .filter((c) => typeof c.name === 'string')
            .map((c) => ({
              name: c.name as string,
              description: typeof c.description === 'string' ? c.description : '',
            }))
        break
      case 'session_info_update':
        if (typeof u.title === 'string' && u.title !== '') l.title = u.title
        break
      case 'usage_update': {
        const cost = u.cost as { amount?: unknown; currency?: unknown } | null | undefined
        l.usage = {
          ...(typeof u.used === 'number' ? { used: u.used } : {}),
          ...(typeof u.size === 'number' ? { size: u.size } : {}),
          ...(typeof cost?.amount === 'number' && typeof cost.currency === 'string'
            ? { cost: { amount: cost.amount, currency: cost.currency } }
            : {}),
        }
        break
      }
      case 'config_option_update':
        if (Array.isArray(u.configOptions)) l.options = otherOptions(u.configOptions as unknown[])
        break
      case 'current_mode_update':
        if (typeof u.currentModeId === 'string') l.mode = u.currentModeId
        break
      default:
        return
    }
    // Outside a turn (commands just after session/new, a title) the change is told now; within
    // one it goes out with the turn's end.
    if (l.status === 'idle') this.publish(agent, place)
  }

  /** The session's state changed (a turn began or ended, a person is being asked). */
  /**
   * After a restart, for a turn this node's stop cut short: its last report said working (or
   * awaiting a card), and nothing else would say otherwise, so every device would show the
   * session working for ever. Reported idle once.
   */
  cutShort(agent: string, place: SessionPlace): void {
    const key = sessionAddress(agent, place.channel, place.thread)
    if (this.live.has(key)) return
    const before = this.lastReport(agent, key)?.status
    this.live_(agent, place)
    if (before === 'working' || before === 'awaiting-permission') this.publish(agent, place, true)
  }

  status(agent: string, place: SessionPlace, status: Live['status'], where?: Live['where']): void {
    const l = this.live_(agent, place)
    if (where !== undefined) l.where = where
    if (l.status === status) return
    l.status = status
    this.publish(agent, place, true)
  }

  /** The session's mode or model was changed here. */
  settings(
    agent: string,
    place: SessionPlace,
    s: { mode?: string; model?: string; options?: Record<string, string> },
  ): void {
    const l = this.live_(agent, place)
    if (s.mode !== undefined) l.mode = s.mode
    if (s.model !== undefined) l.model = s.model
    for (const [id, value] of Object.entries(s.options ?? {})) {
      const o = l.options?.find((x) => x.id === id)
      if (o !== undefined) o.value = value
      else (l.options ??= []).push({ id, name: id, value, values: [] })
    }
    this.publish(agent, place)
  }

  /** The session was closed (kith session close): its last report says so. */
  closed(agent: string, place: SessionPlace): void {
    this.publish(agent, place, false, 'closed')
    this.live.delete(sessionAddress(agent, place.channel, place.thread))
  }

  /** Signs and sends the session's report (a no-op for a session node.db does not hold). */
  publish(agent: string, place: SessionPlace, active = false, status?: SessionStatus): void {
    if (this.node.stopped()) return
    const rec = this.node.store.sessions.record(agent, place)
    const l = this.live_(agent, place)
    const now = this.node.now()
    if (active) this.node.store.sessions.touch(agent, place, now)
    const address = sessionAddress(agent, place.channel, place.thread)
    const spec: SessionStateSpec = {
      agent,
      channel: place.channel,
      ...(place.thread === undefined || place.thread === '' ? {} : { thread: place.thread }),
      status: status ?? l.status,
      ...(l.title !== undefined
        ? { title: l.title }
        : rec?.title === undefined
          ? {}
          : { title: rec.title }),
      ...(rec === undefined ? (l.where ?? {}) : { cwd: rec.cwd, createdAt: rec.createdAt }),
      ...(rec?.project === undefined ? {} : { project: rec.project }),
      ...(rec?.worktree === undefined ? {} : { worktree: rec.worktree }),
      ...(l.acpSession !== undefined
        ? { acpSession: l.acpSession }
        : rec === undefined
          ? {}
          : { acpSession: rec.sessionId }),
      activeAt: active ? now : (rec?.updatedAt ?? now),
      ...(l.mode !== undefined
        ? { mode: l.mode }
        : rec?.mode === undefined
          ? {}
          : { mode: rec.mode }),
      ...(l.modes === undefined ? {} : { modes: l.modes }),
      ...(l.model !== undefined
        ? { model: l.model }
        : rec?.model === undefined
          ? {}
          : { model: rec.model.value }),
      ...(l.models === undefined ? {} : { models: l.models }),
      ...(l.options === undefined ? {} : { options: l.options }),
      ...(l.commands === undefined ? {} : { commands: l.commands }),
      ...(l.usage === undefined ? {} : { usage: l.usage }),
    }
    // Addressable: the newer report must have the later date, or a hub keeps the older one.
    const at = Math.max(now, (this.lastAt.get(address) ?? 0) + 1)
    this.lastAt.set(address, at)
    // Through the node's signer: in a fleet that seals, the report is sealed like chat.
    const template = makeSessionState(spec, this.node.book.fleet, at)
    const secret = this.node.id.deviceSecret
    const event =
      this.node.sign === undefined ? signEvent(template, secret) : this.node.sign(template, secret)
    this.node.enqueue(event)
    this.node.pump()
  }
}
