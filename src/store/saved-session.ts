/**
 * A hosted agent's session as the node store keeps it, so a restarted node can resume it. The
 * shape lives here, beneath acp/, because the store persists it and acp/ fills it in.
 */

/** A session's mode and model as pinned at creation: re-applied after every session/load. */
export interface SessionSettings {
  mode?: string
  /** `configId` set: ACP session/set_config_option; absent: session/set_model. */
  model?: { value: string; configId?: string }
}

/** A channel's session as kept for resuming: its id and cwd, the adapter, its mode and model. */
export interface SavedSession extends SessionSettings {
  sessionId: string
  cwd: string
  adapter?: string
  version?: string
  /** The session's title: its first prompt's first line, or the agent's own (session_info). */
  title?: string
  /** The host's project it was started in (`kith session new --project`). */
  project?: string
  /** The git worktree made for it (its path is `cwd`) and the branch checked out there. */
  worktree?: { path: string; branch: string }
}

/** A saved session with where it lives and when, as `kith session list` reads it. */
export interface SessionRecord extends SavedSession {
  agent: string
  channel: string
  /** The thread's root event id; '' for the channel's main thread. */
  thread: string
  createdAt: number
  updatedAt: number
  closedAt?: number
}
