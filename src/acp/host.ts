import { KithError } from '../errors.js'
import {
  AgentProcess,
  type AgentSpec,
  type AgentTransportFactory,
  type SessionReport,
  type PermissionAnswer,
  type PermissionAsk,
} from './agent-process.js'
import { quorumApplies, type Quorum } from '../events/agent-policy.js'
import { autoAllowOption, autoAllowedUpdate, type PermissionsMode } from './auto-allow.js'
import { setMode, setModel, setOption, steer, type SessionSettings } from './session-calls.js'
import {
  defaultBreakerCrashes,
  defaultBreakerOpenMs,
  defaultBreakerWindowMs,
  defaultCancelGraceMs,
  defaultIdleTimeoutMs,
  defaultRespawnBaseMs,
  defaultTurnCapMs,
  respawnMaxMs,
  respawnRecentMs,
  watchdogCancelGraceMs,
  watchdogTickMaxMs,
  watchdogTickMinMs,
} from './timings.js'
import { openSession, type SessionStore } from './session-open.js'
import { describePlace, sessionKey, type SessionPlace } from './session-key.js'
import { backoffMs } from '../link/backoff.js'

export type { SavedSession, SessionStore } from './session-open.js'
export { sessionKey, type SessionPlace } from './session-key.js'

export type AgentState =
  'stopped' | 'starting' | 'idle' | 'working' | 'awaiting-permission' | 'crashed' | 'circuit-open'

export interface HostOptions {
  sessions?: SessionStore
  /**
   * How the agent is reached each time it starts: by default its command is spawned
   * (agent-spawn.ts); a test passes an in-process ACP agent over in-memory streams.
   */
  transport?: AgentTransportFactory
  /** Which tool calls the host allows without asking a person (default `ask`: none). */
  permissions?: PermissionsMode
  /** Tool kinds whose calls need N people (kith agent add --quorum): never allowed on its own. */
  quorum?: Quorum
  /**
   * Why a call must go to a person whatever `permissions` says (it touches KITH_HOME or other
   * secrets: see secret-paths.ts), or undefined.
   */
  guard?: (ask: PermissionAsk) => string | undefined
  /** Told when a session could not be resumed and a new one was started. */
  onNewSession?: (place: SessionPlace, reason: string) => void
  /** First respawn delay after a crash; doubles per recent crash up to 30 s, jittered. */
  respawnBaseMs?: number
  /** Crashes within `breakerWindowMs` that open the breaker. */
  breakerCrashes?: number
  breakerWindowMs?: number
  /** How long the breaker stays open. */
  breakerOpenMs?: number
  /** A turn with no output from the agent for this long is ended (any stdout byte resets it). */
  idleTimeoutMs?: number
  /** No turn runs longer than this. */
  turnCapMs?: number
  /** Told each time the agent's state changes (presence tells the fleet). */
  onState?: (state: AgentState) => void
  /** Told of each session opened (new or resumed), with what a new one reported. */
  onSessionOpened?: (place: SessionPlace, sessionId: string, report?: SessionReport) => void
  /** Updates that describe a session (commands, title, usage, mode), whenever they come. */
  onSessionInfo?: (place: SessionPlace, update: unknown) => void
}

/**
 * Why a turn gave no answer, a stable code (the message says it in words): `cancelled` by a
 * person or an interrupt, `timeout` (the watchdog: silent past the idle timeout, or past the
 * turn cap), `circuit-open` (crashed too often; left stopped for a while), `crashed` (the process
 * died), `cannot-start` (the command would not start), `stopped` (the host is stopping),
 * `no-reply` (the turn ended with no text), `dropped` (taken off the queue: its author left the
 * fleet), `error` (anything else the agent or the SDK reported).
 */
export type TurnFailure =
  | 'cancelled'
  | 'timeout'
  | 'circuit-open'
  | 'crashed'
  | 'cannot-start'
  | 'stopped'
  | 'no-reply'
  /** A person rejected a tool call and the turn ended without an answer (set by the bridge). */
  | 'rejected'
  | 'dropped'
  | 'error'

const turnFailures: ReadonlySet<string> = new Set<TurnFailure>([
  'cancelled',
  'timeout',
  'circuit-open',
  'crashed',
  'cannot-start',
  'stopped',
  'no-reply',
  'dropped',
  'error',
])

/** Updates kept per session until it is set up: a few (its commands), never a flood. */
const earlyInfoMax = 20

/** A session's title from its first prompt: the first line that says something, at most 80. */
export function titleOf(text: string): string {
  const line = text.split('\n').find((l) => l.trim() !== '') ?? ''
  const t = line.trim()
  return t.length > 80 ? `${t.slice(0, 79)}…` : t
}

/** The failure code an error thrown during a turn carries (its KithError reason), else `error`. */
export function turnFailureOf(err: unknown): TurnFailure {
  return err instanceof KithError && err.reason !== undefined && turnFailures.has(err.reason)
    ? (err.reason as TurnFailure)
    : 'error'
}

/** How a turn ended, as its job is told. `partial`: what the agent had said before it failed. */
export type TurnOutcome =
  | { ok: true; text: string; steered?: true }
  | { ok: false; reason: TurnFailure; message: string; partial?: string }

export interface PromptJob {
  channel: string
  /**
   * The thread (its root event id) whose session runs this prompt; absent: the channel's main
   * thread. Each thread is its own ACP session with its own queue: two threads run side by side.
   */
  thread?: string
  text: string
  /** The key that asked (the chat message's author), so a removed member's prompts can go. */
  from?: string
  /** Where a new session for it starts (a project or worktree); default the agent's cwd. */
  cwd?: string
  /** A new session's mode and model, set once it is open (`kith session new --mode`). */
  settings?: { mode?: string; model?: string }
  /** What to save with a new session besides its settings (its project, worktree). */
  describe?: { project?: string; worktree?: { path: string; branch: string } }
  /** The prompt's event id: cancels and interrupts name the turns they stop by it. */
  prompt?: string
  /** Called when its turn begins (it leaves the queue). */
  started?: () => void
  /**
   * Called once with the agent's final text, or with a one-line refusal/failure. `steered`: the
   * message went into the turn already running (its answer is that turn's reply).
   */
  done: (outcome: TurnOutcome) => void
  /** Asks a person about one of this turn's tool calls. */
  permission: (ask: PermissionAsk) => Promise<PermissionAnswer>
  /** Each session/update of this turn, as the agent sent it. */
  update?: (update: unknown) => void
  /** Filled in as the turn runs (performance.now() ms), for the host-overhead benchmark. */
  timing?: { promptSentAt?: number; stopAt?: number }
}

/**
 * One hosted agent: its process (spawned on first use, respawned after a crash), one ACP
 * session per thread of a channel (see session-key.ts), and a FIFO per session with one turn
 * in flight (sessions run side by side).
 */
export class AgentHost {
  private current: AgentState = 'stopped'
  private proc: AgentProcess | undefined
  private starting: Promise<AgentProcess> | undefined
  /** ACP session ids, by session key (sessionKey: channel, or channel/thread). */
  private readonly sessions = new Map<string, string>()
  /** Where each open ACP session lives (by its id), for updates about it. */
  private readonly places = new Map<string, SessionPlace>()
  /** Updates about sessions not yet set up (see process()), by session id. */
  private readonly early = new Map<string, unknown[]>()
  /** Waiting jobs and the sessions with a turn in flight, by session key. */
  private readonly queues = new Map<string, PromptJob[]>()
  private readonly busy = new Set<string>()
  /** The job whose turn is running in each session, to route its permission requests. */
  private readonly running = new Map<string, PromptJob>()
  crashes = 0
  /** Set by stop(): nothing more is run. */
  private stopped = false
  /** Permission requests of this agent waiting for a person. */
  private asking = 0
  /** Sessions whose turn a person cancelled: their end is reported as a cancel, not a failure. */
  private readonly cancelled = new Set<string>()

  private crashTimes: number[] = []
  private openUntil = 0

  constructor(
    readonly name: string,
    private readonly spec: AgentSpec,
    private readonly log: (line: string) => void,
    private opts: HostOptions = {},
  ) {}

  get state(): AgentState {
    return this.current
  }

  set state(next: AgentState) {
    if (next === this.current) return
    this.current = next
    this.opts.onState?.(next)
  }

  /** Records a crash; 3 within a minute open the breaker for 5 minutes. */
  private noteCrash(): void {
    const now = Date.now()
    this.crashes++
    this.crashTimes = [
      ...this.crashTimes.filter(
        (t) => t > now - (this.opts.breakerWindowMs ?? defaultBreakerWindowMs),
      ),
      now,
    ]
    if (this.crashTimes.length >= (this.opts.breakerCrashes ?? defaultBreakerCrashes)) {
      this.openUntil = now + (this.opts.breakerOpenMs ?? defaultBreakerOpenMs)
      this.state = 'circuit-open'
      this.log(
        `agent ${this.name} crashed ${this.crashTimes.length} times in a minute: not restarted until ${new Date(this.openUntil).toISOString()}`,
      )
    }
  }

  get queueDepth(): number {
    let n = 0
    for (const q of this.queues.values()) n += q.length
    return n
  }

  get info(): { name?: string; version?: string } {
    return this.proc?.agentInfo ?? {}
  }

  enqueue(job: PromptJob): void {
    const q = this.queues.get(sessionKey(job)) ?? []
    // Mid-turn, with nothing queued before it, a message steers the running turn where the
    // adapter advertises steering; otherwise (or when the steer is not taken) it waits its turn.
    const sessionId = this.sessions.get(sessionKey(job))
    const proc = this.proc
    if (
      q.length === 0 &&
      sessionId !== undefined &&
      this.running.has(sessionId) &&
      proc?.canSteer
    ) {
      void steer(proc, sessionId, job.text, (l) => this.log(`agent ${this.name}: ${l}`)).then(
        (taken) => {
          if (!taken) return this.queue(job)
          this.log(
            `agent ${this.name}: steered a message into the turn running in ${describePlace(job)}`,
          )
          job.done({ ok: true, text: '↪ added to the turn in progress', steered: true })
        },
      )
      return
    }
    this.queue(job)
  }

  /**
   * Runs `job` next in its session: it goes to the front of the queue (never steered) and the
   * running turn there, if any and if `stops` says so of it, is cancelled (session/cancel, then a
   * kill after `graceMs`). Returns whether a turn was cancelled.
   */
  interrupt(job: PromptJob, stops: (running: PromptJob) => boolean, graceMs?: number): boolean {
    const key = sessionKey(job)
    const q = this.queues.get(key) ?? []
    q.unshift(job)
    this.queues.set(key, q)
    const running = this.runningIn(job)
    const cancelled = running !== undefined && stops(running) && this.cancel(job, graceMs)
    this.drain(key)
    return cancelled
  }

  /** Whether a turn runs (or is starting, or waits) in any session of `channel`. */
  busyIn(channel: string): boolean {
    const inChannel = (key: string) => key === channel || key.startsWith(`${channel}/`)
    return (
      [...this.busy].some(inChannel) ||
      [...this.queues].some(([key, q]) => q.length > 0 && inChannel(key))
    )
  }

  /** The places (session keys) this host has a session, a queue or a turn for. */
  knownPlaces(): Set<string> {
    const keys = new Set([...this.sessions.keys(), ...this.busy])
    for (const [key, q] of this.queues) if (q.length > 0) keys.add(key)
    return keys
  }

  /** Whether this host has a session, a queue or a turn for `place` (since it started). */
  knows(place: SessionPlace): boolean {
    const key = sessionKey(place)
    return this.sessions.has(key) || this.busy.has(key) || (this.queues.get(key)?.length ?? 0) > 0
  }

  /** The job whose turn runs in the session of `place` now, if any. */
  runningIn(place: SessionPlace): PromptJob | undefined {
    const sessionId = this.sessions.get(sessionKey(place))
    return sessionId === undefined ? undefined : this.running.get(sessionId)
  }

  /** The jobs whose turns run now in any session (thread) of `channel`. */
  runningInChannel(channel: string): PromptJob[] {
    return [...this.running.values()].filter((job) => job.channel === channel)
  }

  private queue(job: PromptJob): void {
    const key = sessionKey(job)
    const q = this.queues.get(key) ?? []
    q.push(job)
    this.queues.set(key, q)
    this.drain(key)
  }

  private drain(key: string): void {
    if (this.stopped || this.busy.has(key)) return
    const job = this.queues.get(key)?.shift()
    if (job === undefined) return
    this.busy.add(key)
    job.started?.()
    void this.run(job)
      .catch((err: unknown): TurnOutcome => ({
        ok: false,
        reason: turnFailureOf(err),
        message: err instanceof Error ? err.message : String(err),
      }))
      .then((outcome) => this.finish(job, outcome))
      .finally(() => {
        this.busy.delete(key)
        if (
          this.busy.size === 0 &&
          (this.state === 'working' || this.state === 'awaiting-permission')
        )
          this.state = 'idle'
        this.drain(key)
      })
  }

  /** Tells the job how its turn ended; a failure to post that is logged, never fatal. */
  private finish(job: PromptJob, outcome: TurnOutcome): void {
    try {
      job.done(outcome)
    } catch (err) {
      // The node goes on hosting every other turn; this one's outcome is in the log.
      this.log(
        `agent ${this.name}: the end of a turn in ${describePlace(job)} could not be posted: ${String(err)}`,
      )
    }
  }

  private async process(): Promise<AgentProcess> {
    if (this.proc?.running) return this.proc
    if (Date.now() < this.openUntil) {
      throw new KithError(
        'error',
        `circuit open: it crashed ${this.crashTimes.length} times in a minute; it is left stopped until ${new Date(this.openUntil).toISOString().slice(11, 19)} UTC`,
        { reason: 'circuit-open' },
      )
    }
    this.starting ??= (async () => {
      // Back off after recent crashes (jittered exponential, 1 s to 30 s by default).
      const recent = this.crashTimes.filter((t) => t > Date.now() - respawnRecentMs).length
      if (recent > 0) {
        const delay = backoffMs(recent - 1, {
          firstMs: this.opts.respawnBaseMs ?? defaultRespawnBaseMs,
          maxMs: respawnMaxMs,
          jitter: [0.5, 1],
        })
        await new Promise((r) => setTimeout(r, delay))
      }
      this.state = 'starting'
      this.sessions.clear()
      this.places.clear()
      this.early.clear()
      const proc = new AgentProcess(
        this.spec,
        (ask) => {
          const job = this.running.get(ask.sessionId)
          // A request outside any turn of ours has nobody to ask.
          return job ? this.permission(job, ask) : Promise.resolve('cancelled')
        },
        (sessionId, update) => this.running.get(sessionId)?.update?.(update),
        (sessionId, update) => {
          const place = this.places.get(sessionId)
          if (place !== undefined) return this.opts.onSessionInfo?.(place, update)
          // Sent before session/new was answered and the session set up (its commands): kept
          // until it is.
          const early = this.early.get(sessionId) ?? []
          if (early.length < earlyInfoMax) early.push(update)
          this.early.set(sessionId, early)
        },
        this.opts.transport,
      )
      try {
        await proc.start()
      } catch (err) {
        this.state = 'crashed'
        this.noteCrash()
        await proc.stop()
        throw err
      }
      // Stopped while it started (a revocation, the node stopping): it must not outlive us.
      if (this.stopped) {
        await proc.stop()
        throw new KithError('error', 'the agent was stopped', { reason: 'stopped' })
      }
      this.proc = proc
      this.state = 'idle'
      void proc.exited.then((code) => {
        if (this.proc === proc && this.state !== 'stopped') {
          this.state = 'crashed'
          this.noteCrash()
          this.log(
            `agent ${this.name} exited (${code ?? 'signal'}); it is restarted on the next prompt`,
          )
        }
      })
      return proc
    })().finally(() => {
      this.starting = undefined
    })
    return this.starting
  }

  /** The agent's policy answers at once where it allows the call (visibly); else a person. */
  private permission(job: PromptJob, ask: PermissionAsk): Promise<PermissionAnswer> {
    const mode = this.opts.permissions ?? 'ask'
    const sensitive = this.opts.guard?.(ask)
    // A quorum kind is the people's call, whatever the mode says (allow-all included).
    const quorum = quorumApplies(this.opts.quorum, ask.toolKind)
    const optionId = sensitive === undefined && !quorum ? autoAllowOption(mode, ask) : undefined
    if (optionId === undefined) {
      if (sensitive !== undefined && mode !== 'ask')
        this.log(
          `agent ${this.name}: ${ask.toolKind} "${ask.title}" ${sensitive}; asking a person although permissions are ${mode}`,
        )
      else if (quorum && autoAllowOption(mode, ask) !== undefined)
        this.log(
          `agent ${this.name}: ${ask.toolKind} "${ask.title}" needs a quorum; asking people although permissions are ${mode}`,
        )
      // Shown as its own state (kith agent list, kith status) while a person is being asked.
      this.asking++
      this.state = 'awaiting-permission'
      // Where the session runs (a project or worktree), so the card says where a command would.
      const cwd = ask.cwd ?? this.opts.sessions?.get(job)?.cwd ?? job.cwd ?? this.spec.cwd
      const asked = { ...ask, cwd, ...(sensitive === undefined ? {} : { sensitive }) }
      return job.permission(asked).finally(() => {
        if (--this.asking === 0 && this.state === 'awaiting-permission')
          this.state = this.busy.size > 0 ? 'working' : 'idle'
      })
    }
    this.log(
      `agent ${this.name}: auto-allowed ${ask.toolKind} "${ask.title}" in ${describePlace(job)} (permissions: ${mode})`,
    )
    job.update?.(autoAllowedUpdate(mode, ask, optionId))
    return Promise.resolve({ optionId })
  }

  private async run(job: PromptJob): Promise<TurnOutcome> {
    const proc = await this.process()
    const key = sessionKey(job)
    let sessionId = this.sessions.get(key)
    if (sessionId === undefined) {
      sessionId = await this.open(proc, job, titleOf(job.text))
      if (job.settings !== undefined) {
        const set = await this.configure(job, job.settings)
        // Logged as the pin before it is: the owner's log says what the session runs in.
        this.log(
          `agent ${this.name}: set the new session ${sessionId} in ${describePlace(job)} to${set.mode === undefined || job.settings.mode === undefined ? '' : ` mode ${set.mode}`}${set.model === undefined || job.settings.model === undefined ? '' : ` model ${set.model.value}`}, as its start asked${job.from === undefined ? '' : ` (by ${job.from.slice(0, 8)})`}`,
        )
      }
    }
    if (this.stopped) throw new KithError('error', 'the agent was stopped', { reason: 'stopped' })
    this.state = 'working'
    this.running.set(sessionId, job)
    const started = Date.now()
    proc.lastOutputAt = started
    const idle = this.opts.idleTimeoutMs ?? defaultIdleTimeoutMs
    const cap = this.opts.turnCapMs ?? defaultTurnCapMs
    let timedOut: string | undefined
    // The watchdog ends a silent or endless turn the way a person's cancel would.
    const watchdog = setInterval(
      () => {
        if (timedOut !== undefined) return
        const now = Date.now()
        if (now - proc.lastOutputAt > idle)
          timedOut = `no output from the agent for ${Math.round(idle / 1000)} s`
        else if (now - started > cap)
          timedOut = `the turn ran past its ${Math.round(cap / 1000)} s cap`
        if (timedOut === undefined) return
        this.log(`agent ${this.name}: ${timedOut}; ending the turn`)
        this.cancel(job, watchdogCancelGraceMs)
      },
      Math.max(watchdogTickMinMs, Math.min(watchdogTickMaxMs, Math.min(idle, cap) / 4)),
    )
    watchdog.unref()
    const failed = (reason: TurnFailure, message: string): TurnOutcome => {
      const partial = proc.partialReply(sessionId)
      return { ok: false, reason, message, ...(partial.trim() === '' ? {} : { partial }) }
    }
    let r
    try {
      if (job.timing) job.timing.promptSentAt = performance.now()
      r = await proc.prompt(sessionId, job.text)
      if (job.timing) job.timing.stopAt = performance.now()
    } catch (err) {
      if (timedOut !== undefined) return failed('timeout', `timed out: ${timedOut}`)
      if (this.cancelled.has(sessionId))
        return failed('cancelled', 'turn cancelled (the agent was stopped)')
      return failed(turnFailureOf(err), err instanceof Error ? err.message : String(err))
    } finally {
      clearInterval(watchdog)
      this.running.delete(sessionId)
      this.cancelled.delete(sessionId)
    }
    if (timedOut !== undefined) return failed('timeout', `timed out: ${timedOut}`)
    if (r.stopReason === 'cancelled') return failed('cancelled', 'turn cancelled')
    if (r.text.trim() === '') {
      return failed('no-reply', `the agent ended its turn (${r.stopReason}) without a reply`)
    }
    return { ok: true, text: r.text }
  }

  /**
   * Cancels the turn running in the session of `place`: ACP session/cancel first, then, if the
   * agent has not ended the turn within the grace window, the process is killed (and restarted
   * on the next prompt). Returns false when nothing was running there.
   */
  cancel(place: SessionPlace, graceMs = defaultCancelGraceMs): boolean {
    const sessionId = this.sessions.get(sessionKey(place))
    if (sessionId === undefined || !this.running.has(sessionId) || this.proc === undefined)
      return false
    const proc = this.proc
    // The grace timer belongs to this turn: a later turn in the same session must not be killed
    // by it.
    const turn = this.running.get(sessionId)
    this.cancelled.add(sessionId)
    proc.cancel(sessionId).catch((err: unknown) => this.log(`cancel ${this.name}: ${String(err)}`))
    setTimeout(() => {
      if (this.running.get(sessionId) === turn && this.proc === proc) {
        this.log(`agent ${this.name} ignored cancel for ${graceMs} ms; stopping it`)
        this.state = 'crashed'
        void proc.stop()
      }
    }, graceMs).unref()
    return true
  }

  /** Opens (or resumes) the session of `place` in `proc`, and remembers it. */
  private async open(
    proc: AgentProcess,
    place: SessionPlace & Pick<PromptJob, 'cwd' | 'describe'>,
    title?: string,
  ): Promise<string> {
    const store = this.opts.sessions
    const sessionId = await openSession(
      proc,
      place,
      place.cwd ?? this.spec.cwd,
      {
        ...this.opts,
        // A new session is saved with its project and worktree.
        ...(store === undefined || place.describe === undefined
          ? {}
          : {
              sessions: {
                get: (p) => store.get(p),
                set: (p, s) => store.set(p, { ...s, ...place.describe }),
              },
            }),
      },
      (l) => this.log(`agent ${this.name}: ${l}`),
      title,
    )
    this.sessions.set(sessionKey(place), sessionId)
    const at = { channel: place.channel, thread: place.thread }
    this.places.set(sessionId, at)
    for (const update of this.early.get(sessionId) ?? []) this.opts.onSessionInfo?.(at, update)
    this.early.delete(sessionId)
    return sessionId
  }

  /**
   * Sets the mode and/or model of the session of `place` (resumed first if this process has not
   * opened it; it must be saved), and saves them so they are set again after every load.
   * Returns the settings saved. Throws KithError('not-found') for a place with no session.
   */
  async configure(
    place: SessionPlace,
    change: { mode?: string; model?: string; options?: Record<string, string> },
  ): Promise<SessionSettings> {
    const saved = this.opts.sessions?.get(place)
    if (saved === undefined && !this.sessions.has(sessionKey(place)))
      throw new KithError('not-found', `no session in ${describePlace(place)}`)
    const proc = await this.process()
    const sessionId = this.sessions.get(sessionKey(place)) ?? (await this.open(proc, place))
    const log = (l: string) => this.log(`agent ${this.name}: ${l}`)
    const settings: SessionSettings = {
      ...(saved?.mode === undefined ? {} : { mode: saved.mode }),
      ...(saved?.model === undefined ? {} : { model: saved.model }),
    }
    if (change.mode !== undefined) {
      if (!(await setMode(proc, sessionId, change.mode, log)))
        throw new KithError('invalid', `${this.name} has no modes to set (no session/set_mode)`)
      settings.mode = change.mode
    }
    if (change.model !== undefined) {
      const model = {
        value: change.model,
        ...(saved?.model?.configId === undefined ? {} : { configId: saved.model.configId }),
      }
      await setModel(proc, sessionId, model, log)
      settings.model = model
    }
    // Other config options are set now, not kept: an agent that forgets them on load needs
    // them set again (kith session set).
    for (const [id, value] of Object.entries(change.options ?? {}))
      await setOption(proc, sessionId, id, value, log)
    const now = this.opts.sessions?.get(place)
    if (now !== undefined) this.opts.sessions?.set(place, { ...now, ...settings })
    return settings
  }

  /**
   * Ends the session of `place`: ACP session/close where the agent advertises it (else it is
   * only forgotten here). Refused while a turn runs or waits there. Returns `closed` (the agent
   * was told), `not-open` (the agent process does not have it open: nothing to tell) or
   * `no-close` (the agent has no session/close).
   */
  async close(place: SessionPlace): Promise<'closed' | 'not-open' | 'no-close'> {
    const key = sessionKey(place)
    if (this.busy.has(key) || (this.queues.get(key)?.length ?? 0) > 0)
      throw new KithError(
        'invalid',
        `a turn runs in ${describePlace(place)}: cancel it first (kith cancel)`,
        { reason: 'busy' },
      )
    const sessionId = this.sessions.get(key)
    this.sessions.delete(key)
    if (sessionId === undefined) return 'not-open'
    this.places.delete(sessionId)
    const proc = this.proc
    if (proc === undefined || !proc.running) return 'not-open'
    if (!proc.canClose) return 'no-close'
    await proc.request('session/close', { sessionId })
    return 'closed'
  }

  /**
   * Stops the agent. Queued jobs are left unanswered (the node's journal runs them after its
   * restart): starting them now would spawn the agent again while the node shuts down.
   */
  async stop(): Promise<void> {
    this.state = 'stopped'
    this.stopped = true
    this.queues.clear()
    await this.proc?.stop()
  }

  /** Changes which tool calls are allowed without asking, from the next request on. */
  setPermissions(mode: PermissionsMode, quorum?: Quorum): void {
    const next: HostOptions = { ...this.opts, permissions: mode }
    if (quorum === undefined) delete next.quorum
    else next.quorum = quorum
    this.opts = next
  }

  /** Removes and returns the queued (not yet running) jobs that match. */
  dropQueued(match: (job: PromptJob) => boolean): PromptJob[] {
    const dropped: PromptJob[] = []
    for (const [key, q] of this.queues) {
      const keep = q.filter((job) => !match(job))
      if (keep.length === q.length) continue
      dropped.push(...q.filter(match))
      this.queues.set(key, keep)
    }
    return dropped
  }

  /** The jobs whose turns are running now. */
  runningJobs(): PromptJob[] {
    return [...this.running.values()]
  }
}
