import { createConnection, type Socket } from 'node:net'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { KithError, type KithErrorCode } from '../errors.js'
import { readConfig } from '../identity/config.js'
import { homeFiles, resolveKithHome } from '../identity/home.js'
import type { EdgeMethods, EdgeNotifications, NodeApi } from '../acp/edge-agent.js'
import type {
  ControlMethod,
  ControlNotifications,
  ControlParams,
  ControlResult,
} from '../node/control-methods.js'

/**
 * The CLI's side of the running node's control socket (KITH_HOME/node.sock): JSON lines, one
 * request per id, notifications by method. The node keeps only the server (node/control.ts);
 * both are typed by one map, `ControlMethods` (node/control-methods.ts).
 */

/** A method's params argument: optional when the method needs none of them. */
type ParamsArg<M extends ControlMethod> =
  Record<string, never> extends ControlParams<M>
    ? [params?: ControlParams<M>]
    : [params: ControlParams<M>]

/**
 * The ACP edge's view of the control API (acp/edge-agent.ts, a layer beneath the node, cannot
 * import `ControlMethods`), checked against it: each method it calls is one the node has, what
 * it sends is what the node reads, what the node answers is what it reads, and so for each
 * notification it follows. A method that drifts fails to compile here, by name.
 */
export type EdgeViewHolds = Holds<
  {
    [M in keyof EdgeMethods]: M extends ControlMethod
      ? [EdgeMethods[M]['params']] extends [ControlParams<M>]
        ? [ControlResult<M>] extends [EdgeMethods[M]['result']]
          ? true
          : false
        : false
      : false
  } & {
    [N in keyof EdgeNotifications]: N extends keyof ControlNotifications
      ? [ControlNotifications[N]] extends [EdgeNotifications[N]]
        ? true
        : false
      : false
  }
>
type Holds<T extends Record<keyof EdgeMethods | keyof EdgeNotifications, true>> = T

/** What a client hears: the node's notifications, and `close` when the connection ends. */
type Heard = ControlNotifications & { close: undefined }

/** A connection to the running node. Every pending request is rejected when it closes. */
export class ControlClient {
  private nextId = 1
  private readonly pending = new Map<
    number,
    { resolve: (v: unknown) => void; reject: (e: Error) => void }
  >()
  private readonly listeners = new Map<string, ((params: unknown) => void)[]>()
  private closed = false

  private constructor(private readonly socket: Socket) {
    const lines = createInterface({ input: socket })
    lines.on('line', (line) => {
      let msg: {
        id?: number
        result?: unknown
        error?: { code: string; message: string; reason?: string }
        method?: string
        params?: unknown
      }
      try {
        msg = JSON.parse(line) as typeof msg
      } catch {
        // The daemon only writes JSON lines; anything else is ignored rather than trusted.
        return
      }
      if (msg.id !== undefined) {
        const p = this.pending.get(msg.id)
        if (!p) return
        this.pending.delete(msg.id)
        if (msg.error) {
          const { code, message, reason } = msg.error
          p.reject(
            new KithError(
              code as KithErrorCode,
              message,
              typeof reason === 'string' ? { reason } : undefined,
            ),
          )
        } else p.resolve(msg.result)
      } else if (msg.method !== undefined) {
        for (const fn of this.listeners.get(msg.method) ?? []) fn(msg.params)
      }
    })
    socket.on('close', () => {
      this.closed = true
      const err = new KithError('io', 'the kith node closed the control connection')
      for (const p of this.pending.values()) p.reject(err)
      this.pending.clear()
      for (const fn of this.listeners.get('close') ?? []) fn(undefined)
    })
    socket.on('error', () => socket.destroy())
  }

  /** Connects, or resolves undefined when no daemon is running for this KITH_HOME. */
  static connect(path: string): Promise<ControlClient | undefined> {
    return new Promise((resolve) => {
      const socket = createConnection(path)
      socket.once('connect', () => resolve(new ControlClient(socket)))
      socket.once('error', () => resolve(undefined))
    })
  }

  /** Calls one method of the node: params and result typed by `ControlMethods`. */
  request<M extends ControlMethod>(method: M, ...params: ParamsArg<M>): Promise<ControlResult<M>> {
    return this.call(method, params[0] ?? {}) as Promise<ControlResult<M>>
  }

  /** Listens to one of the node's notifications (or the connection's end, `close`). */
  on<N extends keyof Heard>(method: N, fn: (params: Heard[N]) => void): void {
    this.listen(method, fn as (params: unknown) => void)
  }

  /**
   * This connection as the ACP edge (acp/edge-agent.ts) uses it, typed by its `EdgeMethods`:
   * a part of `ControlMethods`, as `EdgeViewHolds` checks. The node still reads every request's
   * params (node/control.ts) before any handler runs.
   */
  asNodeApi(): NodeApi {
    return {
      // Each result is what `ControlMethods` says, which `EdgeViewHolds` shows the edge reads.
      request: (method, ...params) => this.call(method, params[0] ?? {}),
      on: (method, fn) => this.listen(method, fn as (params: unknown) => void),
    }
  }

  private call(method: string, params: unknown): Promise<unknown> {
    if (this.closed) return Promise.reject(new KithError('io', 'control connection is closed'))
    const id = this.nextId++
    return new Promise<unknown>((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      this.socket.write(`${JSON.stringify({ id, method, params })}\n`)
    })
  }

  private listen(method: string, fn: (params: unknown) => void): void {
    this.listeners.set(method, [...(this.listeners.get(method) ?? []), fn])
  }

  close(): void {
    this.socket.end()
  }

  /** Resolves when the daemon closes the connection or the user stops (SIGINT/SIGTERM). */
  untilClosedOrStopped(): Promise<void> {
    return new Promise<void>((resolve) => {
      const stop = () => {
        this.close()
        resolve()
      }
      this.on('close', () => resolve())
      process.once('SIGINT', stop)
      process.once('SIGTERM', stop)
    })
  }
}

/** Connects to this KITH_HOME's running node (kith up), or undefined when none runs. */
export function connectNode(home: string = resolveKithHome()): Promise<ControlClient | undefined> {
  return ControlClient.connect(join(home, homeFiles.controlSocket))
}

/**
 * Connects to the running node for a command that cannot work without it. With none running it
 * says what to do first: kith init on a machine that has no identity yet (exit 3), else kith up.
 */
export async function requireNode(
  why: string,
  home: string = resolveKithHome(),
): Promise<ControlClient> {
  const node = await connectNode(home)
  if (node !== undefined) return node
  if (readConfig(home) === undefined) {
    throw new KithError('not-initialized', `no kith identity in ${home}: run \`kith init\` first`)
  }
  throw new KithError('io', why)
}
