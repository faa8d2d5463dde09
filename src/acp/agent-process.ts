import { spawn, type ChildProcess } from 'node:child_process'
import { createWriteStream, existsSync, type WriteStream } from 'node:fs'
import { Readable, Transform, Writable } from 'node:stream'
import type * as Acp from '@agentclientprotocol/sdk'
import { KithError } from '../errors.js'
import { removePidFile, signalGroup, writePidFile } from './process-group.js'
import { ReplyText } from './reply-text.js'
import { crashSettleMs, killGraceMs, loadQuietMaxMs, loadQuietMs } from './timings.js'

/**
 * The ACP SDK (with the schemas under it, ~10 MB resident) is loaded when the first agent starts,
 * not by every node: most nodes host no agent, or none until a prompt arrives.
 */
let acp: typeof Acp | undefined
let acpLoading: Promise<typeof Acp> | undefined

function loadAcp(): Promise<typeof Acp> {
  acpLoading ??= import('@agentclientprotocol/sdk').then((m) => (acp = m))
  return acpLoading
}

/** The SDK, once an agent has started (every caller runs after `start`). */
function sdk(): typeof Acp {
  if (acp === undefined) throw new KithError('error', 'the ACP SDK is not loaded yet')
  return acp
}

/** Environment variables an agent inherits; nothing else (no Kith secret is ever in env). */
export const envAllowlist = [
  'PATH',
  'HOME',
  'LANG',
  'LC_ALL',
  'TERM',
  'USER',
  'SHELL',
  'TMPDIR',
  'NODE_PATH',
]

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

/** What the host needs to ask a person about a tool call. */
export interface PermissionAsk {
  sessionId: string
  toolCallId: string
  title: string
  toolKind: string
  options: { optionId: string; name: string; kind: string }[]
  /** What the call will do, as the agent described it (ACP rawInput, locations, content). */
  rawInput?: unknown
  locations?: { path?: unknown }[]
  content?: unknown
  /**
   * The same call as the turn's earlier tool_call / tool_call_update notifications described it
   * (an adapter may put the input there and not in the request): checked as well.
   */
  announced?: ToolCallSeen
  /** Set by the host: why this call must go to a person whatever the policy (a secret path). */
  sensitive?: string
  /** Set by the host: the cwd of the session asking (where a command would run). */
  cwd?: string
}

/** A tool call as the session's updates described it so far. */
export interface ToolCallSeen {
  title?: string
  kind?: string
  rawInput?: unknown
  locations?: { path?: unknown }[]
  content?: unknown
}

/** The person's answer: an option id, or cancelled (timeout, cancel, nobody allowed answered). */
export type PermissionAnswer = { optionId: string } | 'cancelled'

export interface TurnResult {
  stopReason: string
  text: string
}

/** What `session/new` (or `session/load`) reported about the session's mode and model. */
export interface SessionReport {
  modes?: { currentModeId: string; availableModes: { id: string; name: string }[] } | null
  configOptions?:
    { id: string; type: string; category?: string | null; currentValue?: unknown }[] | null
  /** Not in ACP's stable schema (an unstable field some adapters send): set with session/set_model. */
  models?: { currentModelId?: unknown } | null
}

/** session/update kinds that describe the session itself, not a turn's work. */
const sessionInfoUpdates: ReadonlySet<string> = new Set([
  'available_commands_update',
  'session_info_update',
  'usage_update',
  'current_mode_update',
  'config_option_update',
])

/** The JSON-RPC error code behind a failed call (-32601 method absent, …), if the agent sent one. */
export function acpErrorCode(err: unknown): number | undefined {
  const cause = err instanceof KithError ? err.cause : err
  return acp !== undefined && cause instanceof acp.RequestError ? cause.code : undefined
}

/** What a JSON-RPC error's data says in words: itself, or its `details` or `message`. */
export function errorDetail(err: Acp.RequestError): string {
  const data = err.data as { details?: unknown; message?: unknown } | string | undefined | null
  if (typeof data === 'string') return data.trim()
  if (typeof data?.details === 'string') return data.details.trim()
  if (typeof data?.message === 'string') return data.message.trim()
  return ''
}

/**
 * The one-line notice for ACP -32000: authentication required, with the agent's own words (its
 * error message when it says more than that, and how its authMethods say to log in). Kith never
 * calls `authenticate` itself: logging in is for a person on that machine.
 */
export function authRequired(err: Acp.RequestError, hint: string): string {
  const said = err.message.trim()
  const detail = errorDetail(err)
  const parts = [
    /^authentication required\.?$/i.test(said) || said === '' ? '' : said,
    detail,
    hint === '' ? '' : `to log in: ${hint}`,
  ].filter((p) => p !== '')
  const text = `authentication required${parts.length > 0 ? ` (${parts.join('; ')})` : ''}`
  return text.replace(/\s+/g, ' ')
}

/**
 * One spawned ACP agent process and its SDK client connection. Every request races the child's
 * death: the SDK rejects in-flight requests with a bare error when the stream ends, which is
 * turned into KithError('error', 'agent crashed …').
 */
export class AgentProcess {
  private child: ChildProcess | undefined
  private conn: Acp.ClientConnection | undefined
  private log: WriteStream | undefined
  agentInfo: { name?: string; version?: string } = {}
  canLoadSession = false
  /** The agent advertised session/close (initialize sessionCapabilities.close). */
  canClose = false
  /** The adapter advertised steering (initialize `_meta.steering.supported === true`). */
  canSteer = false
  /** Why the agent's log file stopped taking writes, if it did. */
  logError: string | undefined
  /** Methods the agent answered -32601 (absent) to: not called again. */
  readonly absent = new Set<string>()
  /** How the agent says it can be authenticated (its initialize authMethods), for a notice. */
  authHint = ''
  /** The reply of each session's turn: the one running, or else the last one. */
  private readonly replies = new Map<string, ReplyText>()
  /** Sessions with a turn of ours running (a session/load replay is not one). */
  private readonly turns = new Set<string>()
  /** Tool calls announced by each running turn's updates, by session then toolCallId. */
  private readonly toolCalls = new Map<string, Map<string, ToolCallSeen>>()
  /** When each session last sent a session/update (ms), to let a load's replay finish. */
  private readonly lastUpdateAt = new Map<string, number>()
  exited: Promise<number | null> = Promise.resolve(null)
  /** When the agent last wrote anything on stdout (ms): agents are silent while tools run. */
  lastOutputAt = Date.now()

  constructor(
    private readonly spec: AgentSpec,
    private readonly onPermission: (ask: PermissionAsk) => Promise<PermissionAnswer> = () =>
      Promise.resolve('cancelled'),
    /** Every session/update of a turn in progress, as the agent sent it (for observer frames). */
    private readonly onUpdate: (sessionId: string, update: unknown) => void = () => undefined,
    /**
     * Updates about a session rather than a turn (its commands, title, usage, mode, config),
     * whenever they come: they describe the session (`kith session show`).
     */
    private readonly onSessionInfo: (sessionId: string, update: unknown) => void = () => undefined,
  ) {}

  async start(): Promise<void> {
    const [command, ...args] = this.spec.argv
    if (command === undefined) throw new KithError('usage', 'an agent needs a command')
    await loadAcp()
    const acp = sdk()
    const logFile = createWriteStream(this.spec.logPath, { flags: 'a', mode: 0o600 })
    this.log = logFile
    // The log is open before the agent starts (a failure to open it is the caller's error);
    // a later write error (disk full, file removed) is kept, not fatal: the agent runs on.
    await new Promise<void>((resolve, reject) => {
      logFile.once('open', () => resolve())
      logFile.once('error', (err) =>
        reject(new KithError('io', `cannot open ${this.spec.logPath}: ${err.message}`)),
      )
    })
    logFile.on('error', (err) => (this.logError = err.message))
    // spawn says ENOENT for a missing cwd as for a missing command: tell them apart.
    if (!existsSync(this.spec.cwd)) {
      const why = `its working directory ${this.spec.cwd} does not exist (kith agent add --cwd)`
      logFile.write(`[kith] ${new Date().toISOString()} cannot start ${command}: ${why}\n`)
      throw new KithError('error', `cannot start ${command}: ${why}`, {
        reason: 'cannot-start',
      })
    }
    const env: NodeJS.ProcessEnv = {}
    for (const name of [...envAllowlist, ...(this.spec.env ?? [])]) {
      if (process.env[name] !== undefined) env[name] = process.env[name]
    }
    // Its own process group (detached), so stopping it stops what it started.
    const child = spawn(command, args, {
      cwd: this.spec.cwd,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    })
    this.child = child
    const pidPath = this.spec.pidPath
    this.exited = new Promise((resolve) =>
      child.once('exit', (code) => {
        if (pidPath !== undefined) removePidFile(pidPath)
        // What it started (tools, MCP servers) goes with it, however it ended.
        if (child.pid !== undefined) {
          try {
            signalGroup(child.pid, 'SIGKILL')
          } catch (err) {
            if (this.log?.writable)
              this.log.write(`[kith] could not stop its process group: ${String(err)}\n`)
          }
        }
        resolve(code)
      }),
    )
    if (pidPath !== undefined && child.pid !== undefined) writePidFile(pidPath, child.pid)
    const spawned = new Promise<void>((resolve, reject) => {
      child.once('spawn', () => resolve())
      child.once('error', (err: NodeJS.ErrnoException) => {
        // Said in its log too (kith agent logs NAME), where a person looks when it will not run.
        const why =
          err.code === 'ENOENT'
            ? `${command} was not found (is it installed, and on the PATH kith up runs with?)`
            : err.code === 'EACCES'
              ? `${command} is not executable`
              : err.message
        logFile.write(`[kith] ${new Date().toISOString()} cannot start ${command}: ${why}\n`)
        reject(
          new KithError('error', `cannot start ${command}: ${why}`, { reason: 'cannot-start' }),
        )
      })
    })
    child.stderr.pipe(this.log, { end: false })
    // stdout is the protocol; a line that is not JSON (an adapter printing a banner or ANSI) is
    // logged and skipped instead of breaking the stream.
    const log = this.log
    let pending = ''
    const onlyJson = new Transform({
      transform: (chunk: Buffer, _enc, done) => {
        this.lastOutputAt = Date.now()
        pending += chunk.toString('utf8')
        let out = ''
        let i
        while ((i = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, i + 1)
          pending = pending.slice(i + 1)
          if (line.trimStart().startsWith('{')) out += line
          else if (line.trim() !== '') log.write(`[non-JSON stdout] ${line}`)
        }
        done(null, out)
      },
    })
    child.stdout.pipe(onlyJson)
    await spawned
    this.conn = acp
      .client({ name: 'kith' })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        const u = params.update
        this.lastUpdateAt.set(params.sessionId, Date.now())
        if (sessionInfoUpdates.has(u.sessionUpdate)) this.onSessionInfo(params.sessionId, u)
        // Only updates of a turn we run are passed on: a session/load replay is not.
        if (!this.turns.has(params.sessionId)) return
        if (u.sessionUpdate === 'tool_call' || u.sessionUpdate === 'tool_call_update')
          this.noteToolCall(params.sessionId, u)
        this.onUpdate(params.sessionId, u)
        this.replies.get(params.sessionId)?.add(u)
      })
      .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
        // Options are passed on exactly as the agent gave them; the answer names one of them.
        const call = params.toolCall
        const announced = this.toolCalls.get(params.sessionId)?.get(call.toolCallId)
        const answer = await this.onPermission({
          sessionId: params.sessionId,
          toolCallId: call.toolCallId,
          title: call.title ?? announced?.title ?? 'a tool call',
          toolKind: call.kind ?? announced?.kind ?? 'other',
          options: params.options.map((o) => ({
            optionId: o.optionId,
            name: o.name,
            kind: o.kind,
          })),
          ...(call.rawInput === undefined ? {} : { rawInput: call.rawInput }),
          ...(call.locations === undefined || call.locations === null
            ? {}
            : { locations: call.locations }),
          ...(call.content === undefined || call.content === null ? {} : { content: call.content }),
          ...(announced === undefined ? {} : { announced }),
        })
        return answer === 'cancelled'
          ? { outcome: { outcome: 'cancelled' as const } }
          : { outcome: { outcome: 'selected' as const, optionId: answer.optionId } }
      })
      .connect(
        acp.ndJsonStream(
          Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
          Readable.toWeb(onlyJson) as ReadableStream<Uint8Array>,
        ),
      )
    const init = await this.call(() =>
      this.conn!.agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {},
        clientInfo: { name: 'kith', version: '0.1.0' },
      }),
    )
    this.agentInfo = {
      ...(init.agentInfo?.name ? { name: init.agentInfo.name } : {}),
      ...(init.agentInfo?.version ? { version: init.agentInfo.version } : {}),
    }
    this.canLoadSession = init.agentCapabilities?.loadSession === true
    this.canClose = init.agentCapabilities?.sessionCapabilities?.close != null
    const steering = init._meta?.['steering']
    this.canSteer =
      typeof steering === 'object' &&
      steering !== null &&
      (steering as { supported?: unknown }).supported === true
    this.authHint = (init.authMethods ?? [])
      .map((m) => (m.description ? `${m.name}: ${m.description.replace(/\.$/, '')}` : m.name))
      .join('; ')
  }

  /** Runs an SDK call, turning the agent's death into a clear error. */
  private async call<T>(fn: () => Promise<T>): Promise<T> {
    const died = this.exited.then((code) => {
      throw new KithError('error', `agent crashed (exit ${code ?? 'signal'})`, {
        reason: 'crashed',
      })
    })
    try {
      return await Promise.race([fn(), died])
    } catch (err) {
      if (err instanceof KithError) throw err
      if (err instanceof sdk().RequestError && err.code === -32000) {
        throw new KithError('error', authRequired(err, this.authHint), { cause: err })
      }
      if (this.child?.exitCode !== null || this.conn?.signal.aborted) {
        // The stream can end before the exit event: wait for it (briefly) so that whoever
        // watches the process has counted the crash before the caller hears of it.
        await Promise.race([this.exited, new Promise((r) => setTimeout(r, crashSettleMs).unref())])
        throw new KithError('error', 'agent crashed', { cause: err, reason: 'crashed' })
      }
      // The agent's own explanation often sits in data (details or message), not in message.
      const detail = err instanceof sdk().RequestError ? errorDetail(err) : ''
      throw new KithError(
        'error',
        `agent error: ${err instanceof Error ? err.message : String(err)}${detail === '' ? '' : `: ${detail}`}`,
        { cause: err },
      )
    }
  }

  async newSession(cwd: string): Promise<SessionReport & { sessionId: string }> {
    return this.call(() =>
      this.conn!.agent.request(sdk().methods.agent.session.new, { cwd, mcpServers: [] }),
    )
  }

  /**
   * Any other ACP request by method name (session/set_mode, an extension method, …), raced
   * against the agent's death like every call.
   */
  async request<T>(method: string, params: Record<string, unknown>): Promise<T> {
    return this.call(() => this.conn!.agent.request<T>(method, params))
  }

  /**
   * Resumes a session (ACP session/load). The agent replays its history as session/update
   * notifications before it answers; no turn listener is set for the session meanwhile, so none
   * of it is taken for a new reply.
   */
  async loadSession(sessionId: string, cwd: string): Promise<void> {
    await this.call(() =>
      this.conn!.agent.request(sdk().methods.agent.session.load, {
        sessionId,
        cwd,
        mcpServers: [],
      }),
    )
    // ACP sends the replay before the load's answer, but gemini-cli 0.61 goes on replaying after
    // it: let the session fall quiet first, or the tail of the old conversation would be taken
    // for the next turn's reply. Bounded, and instant for an agent that replays nothing late.
    const quietMs = loadQuietMs
    const deadline = Date.now() + loadQuietMaxMs
    for (;;) {
      const since = Date.now() - (this.lastUpdateAt.get(sessionId) ?? 0)
      if (since >= quietMs || Date.now() >= deadline) return
      await new Promise((r) => setTimeout(r, quietMs - since))
    }
  }

  /** Merges a tool_call / tool_call_update into what the turn has said of that call. */
  private noteToolCall(
    sessionId: string,
    u: {
      toolCallId: string
      title?: string | null
      kind?: string | null
      rawInput?: unknown
      locations?: { path?: unknown }[] | null
      content?: unknown
    },
  ): void {
    const calls = this.toolCalls.get(sessionId) ?? new Map<string, ToolCallSeen>()
    this.toolCalls.set(sessionId, calls)
    // A turn's calls are bounded by what a host keeps: past this, the oldest is forgotten.
    if (!calls.has(u.toolCallId) && calls.size >= 500) calls.delete(calls.keys().next().value!)
    const seen = calls.get(u.toolCallId) ?? {}
    if (typeof u.title === 'string') seen.title = u.title
    if (typeof u.kind === 'string') seen.kind = u.kind
    if (u.rawInput !== undefined) seen.rawInput = u.rawInput
    if (Array.isArray(u.locations)) seen.locations = u.locations
    if (u.content !== undefined && u.content !== null) seen.content = u.content
    calls.set(u.toolCallId, seen)
  }

  /** One turn: the prompt text in, the assistant's text (all message chunks) and stop reason out. */
  async prompt(sessionId: string, text: string): Promise<TurnResult> {
    const reply = new ReplyText()
    this.replies.set(sessionId, reply)
    this.turns.add(sessionId)
    try {
      const r = await this.call(() =>
        this.conn!.agent.request(sdk().methods.agent.session.prompt, {
          sessionId,
          prompt: [{ type: 'text', text }],
        }),
      )
      return { stopReason: r.stopReason, text: reply.text }
    } finally {
      this.turns.delete(sessionId)
      this.toolCalls.delete(sessionId)
    }
  }

  /**
   * What the session's turn (running, or the last one) has said so far: kept after a turn that
   * failed or was cancelled, so what was streamed before is not lost.
   */
  partialReply(sessionId: string): string {
    return this.replies.get(sessionId)?.text ?? ''
  }

  /** Asks the agent to stop the session's turn (ACP session/cancel, a notification). */
  async cancel(sessionId: string): Promise<void> {
    await this.conn?.agent.notify(sdk().methods.agent.session.cancel, { sessionId })
  }

  get running(): boolean {
    return (
      this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null
    )
  }

  async stop(): Promise<void> {
    this.conn?.close()
    if (this.running) {
      const pid = this.child?.pid
      const kill = (signal: NodeJS.Signals) => {
        if (pid === undefined || !signalGroup(pid, signal)) this.child?.kill(signal)
      }
      kill('SIGTERM')
      const timer = setTimeout(() => kill('SIGKILL'), killGraceMs)
      await this.exited
      clearTimeout(timer)
    }
    this.log?.end()
  }
}
