import type * as Acp from '@agentclientprotocol/sdk'
import { KithError } from '../errors.js'
import { spawnAgent } from './agent-spawn.js'
import type { AgentSpec, AgentTransport, AgentTransportFactory } from './agent-transport.js'
import { ReplyText } from './reply-text.js'
import { crashSettleMs, loadQuietMaxMs, loadQuietMs } from './timings.js'

export { envAllowlist } from './agent-spawn.js'
export type { AgentSpec, AgentTransport, AgentTransportFactory } from './agent-transport.js'

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
 * One running ACP agent (a spawned process unless another transport is given) and its SDK client
 * connection. Every request races the agent's end: the SDK rejects in-flight requests with a
 * bare error when the stream ends, which is turned into KithError('error', 'agent crashed …').
 */
export class AgentProcess {
  private transport: AgentTransport | undefined
  private conn: Acp.ClientConnection | undefined
  agentInfo: { name?: string; version?: string } = {}
  canLoadSession = false
  /** The agent advertised session/close (initialize sessionCapabilities.close). */
  canClose = false
  /** The adapter advertised steering (initialize `_meta.steering.supported === true`). */
  canSteer = false
  /** Why the agent's log file stopped taking writes, if it did. */
  get logError(): string | undefined {
    return this.transport?.logError
  }
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
    /** How the agent is reached: by default its command, spawned (agent-spawn.ts). */
    private readonly connect: AgentTransportFactory = spawnAgent,
  ) {}

  async start(): Promise<void> {
    await loadAcp()
    const acp = sdk()
    const transport = await this.connect(this.spec, () => (this.lastOutputAt = Date.now()))
    this.transport = transport
    this.exited = transport.exited
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
      .connect(acp.ndJsonStream(transport.output, transport.input))
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
      if (this.transport?.running !== true || this.conn?.signal.aborted) {
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
    return this.transport?.running === true
  }

  async stop(): Promise<void> {
    this.conn?.close()
    await this.transport?.stop()
  }
}
