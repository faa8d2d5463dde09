import type { AgentProcess, SessionReport } from './agent-process.js'
import type { SavedSession } from '../store/saved-session.js'
import { pinNewSession, reapplySettings } from './session-calls.js'
import { describePlace, type SessionPlace } from './session-key.js'

export type { SavedSession } from '../store/saved-session.js'

/** Where a host keeps its sessions (one per thread) so a restarted node can resume them. */
export interface SessionStore {
  get(place: SessionPlace): SavedSession | undefined
  set(place: SessionPlace, session: SavedSession): void
}

export interface OpenSessionOptions {
  sessions?: SessionStore | undefined
  /** Told when a session could not be resumed and a new one was started. */
  onNewSession?: ((place: SessionPlace, reason: string) => void) | undefined
  /** Told of each session opened: what a new one reported (its modes, models, options). */
  onSessionOpened?:
    | ((place: SessionPlace, sessionId: string, report: SessionReport | undefined) => void)
    | undefined
}

/**
 * The session of a channel's thread: the persisted one resumed with session/load where the agent
 * advertises it (then its mode and model set again: some adapters forget them on load), else a
 * new one pinned to an asking mode (and, when an old one existed, a visible notice why).
 */
export async function openSession(
  proc: AgentProcess,
  place: SessionPlace,
  cwd: string,
  opts: OpenSessionOptions,
  log: (line: string) => void,
  /** A new session's title (its first prompt's first line). */
  title?: string,
): Promise<string> {
  const saved = opts.sessions?.get(place)
  if (saved !== undefined) {
    if (proc.canLoadSession) {
      try {
        await proc.loadSession(saved.sessionId, saved.cwd)
        await reapplySettings(proc, saved.sessionId, saved, log)
        log(`resumed session ${saved.sessionId} for ${describePlace(place)}`)
        opts.onSessionOpened?.(place, saved.sessionId, undefined)
        return saved.sessionId
      } catch (err) {
        opts.onNewSession?.(
          place,
          `the agent could not resume it (${err instanceof Error ? err.message : String(err)})`,
        )
      }
    } else opts.onNewSession?.(place, 'the agent cannot resume sessions (no session/load)')
  }
  const report = await proc.newSession(cwd)
  const settings = await pinNewSession(proc, report.sessionId, report, log)
  opts.onSessionOpened?.(place, report.sessionId, report)
  opts.sessions?.set(place, {
    sessionId: report.sessionId,
    cwd,
    ...(proc.agentInfo.name === undefined ? {} : { adapter: proc.agentInfo.name }),
    ...(proc.agentInfo.version === undefined ? {} : { version: proc.agentInfo.version }),
    ...settings,
    ...(title === undefined || title === '' ? {} : { title }),
  })
  return report.sessionId
}
