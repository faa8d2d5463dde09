/**
 * What an agent is reached over: the host speaks ACP through an AgentTransport and never asks
 * what is at its other end. A spawned command is the one in use (agent-spawn.ts); tests put an
 * in-process ACP agent there, over in-memory streams, as the ACP SDK's own tests do.
 */

export interface AgentSpec {
  argv: string[]
  cwd: string
  /** stderr and non-protocol stdout lines go here. */
  logPath: string
  /** Extra environment variable names to pass through. */
  env?: string[]
  /** Where the running agent's pid is kept (see process-group.ts). */
  pidPath?: string
}

/** The byte streams of one running agent (ACP as newline-delimited JSON), and its life. */
export interface AgentTransport {
  /** What the host writes to the agent. */
  readonly output: WritableStream<Uint8Array>
  /** What the agent writes to the host (JSON lines only). */
  readonly input: ReadableStream<Uint8Array>
  /** Settles once the agent is gone: its exit code, null for a signal (or no process). */
  readonly exited: Promise<number | null>
  /** Whether the agent is still there. */
  readonly running: boolean
  /** Why its log stopped taking writes, if it did (the agent runs on). */
  readonly logError?: string | undefined
  /** Stops the agent (and whatever it started) and resolves once it is gone. */
  stop(): Promise<void>
}

/**
 * Starts the agent of `spec` and gives its transport; `heard` is called for everything the
 * agent writes (the turn watchdog's sign of life). Throws KithError (reason `cannot-start`) when
 * it will not start.
 */
export type AgentTransportFactory = (spec: AgentSpec, heard: () => void) => Promise<AgentTransport>
