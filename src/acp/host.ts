import { KithError } from '../errors.js'
import {
  AgentProcess,
  type AgentSpec,
  type PermissionAnswer,
  type PermissionAsk,
} from './agent-process.js'

export type AgentState = 'stopped' | 'starting' | 'idle' | 'working' | 'crashed'

export interface PromptJob {
  channel: string
  text: string
  /** Called once with the agent's final text, or with a one-line refusal/failure. */
  done: (outcome: { ok: true; text: string } | { ok: false; message: string }) => void
  /** Asks a person about one of this turn's tool calls. */
  permission: (ask: PermissionAsk) => Promise<PermissionAnswer>
}

/**
 * One hosted agent: its process (spawned on first use, respawned after a crash), one ACP
 * session per channel, and a FIFO per channel with one turn in flight.
 */
export class AgentHost {
  state: AgentState = 'stopped'
  private proc: AgentProcess | undefined
  private starting: Promise<AgentProcess> | undefined
  private readonly sessions = new Map<string, string>()
  private readonly queues = new Map<string, PromptJob[]>()
  private readonly busy = new Set<string>()
  /** The job whose turn is running in each session, to route its permission requests. */
  private readonly running = new Map<string, PromptJob>()
  crashes = 0

  constructor(
    readonly name: string,
    private readonly spec: AgentSpec,
    private readonly log: (line: string) => void,
  ) {}

  get queueDepth(): number {
    let n = 0
    for (const q of this.queues.values()) n += q.length
    return n
  }

  get info(): { name?: string; version?: string } {
    return this.proc?.agentInfo ?? {}
  }

  enqueue(job: PromptJob): void {
    const q = this.queues.get(job.channel) ?? []
    q.push(job)
    this.queues.set(job.channel, q)
    this.drain(job.channel)
  }

  private drain(channel: string): void {
    if (this.busy.has(channel)) return
    const job = this.queues.get(channel)?.shift()
    if (job === undefined) return
    this.busy.add(channel)
    this.run(job)
      .then(
        (text) => job.done({ ok: true, text }),
        (err: unknown) =>
          job.done({ ok: false, message: err instanceof Error ? err.message : String(err) }),
      )
      .finally(() => {
        this.busy.delete(channel)
        if (this.busy.size === 0 && this.state === 'working') this.state = 'idle'
        this.drain(channel)
      })
  }

  private async process(): Promise<AgentProcess> {
    if (this.proc?.running) return this.proc
    this.starting ??= (async () => {
      this.state = 'starting'
      this.sessions.clear()
      const proc = new AgentProcess(this.spec, (ask) => {
        const job = this.running.get(ask.sessionId)
        // A request outside any turn of ours has nobody to ask.
        return job ? job.permission(ask) : Promise.resolve('cancelled')
      })
      try {
        await proc.start()
      } catch (err) {
        this.state = 'crashed'
        await proc.stop()
        throw err
      }
      this.proc = proc
      this.state = 'idle'
      void proc.exited.then((code) => {
        if (this.proc === proc && this.state !== 'stopped') {
          this.crashes++
          this.state = 'crashed'
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

  private async run(job: PromptJob): Promise<string> {
    const proc = await this.process()
    let sessionId = this.sessions.get(job.channel)
    if (sessionId === undefined) {
      sessionId = await proc.newSession(this.spec.cwd)
      this.sessions.set(job.channel, sessionId)
    }
    this.state = 'working'
    this.running.set(sessionId, job)
    let r
    try {
      r = await proc.prompt(sessionId, job.text)
    } finally {
      this.running.delete(sessionId)
    }
    if (r.text.trim() === '') {
      throw new KithError('error', `the agent ended its turn (${r.stopReason}) without a reply`)
    }
    return r.text
  }

  async stop(): Promise<void> {
    this.state = 'stopped'
    await this.proc?.stop()
  }
}
