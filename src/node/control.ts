import { chmodSync, existsSync, unlinkSync } from 'node:fs'
import { createConnection, createServer, type Server, type Socket } from 'node:net'
import { createInterface } from 'node:readline'
import { KithError, type KithErrorCode } from '../errors.js'

/**
 * The local control socket (KITH_HOME/node.sock, 0600 inside the 0700 home) through which CLI
 * commands talk to the running daemon: newline-delimited JSON, one request per line,
 * `{id, method, params}` → `{id, result}` or `{id, error: {code, message}}`; notifications
 * (`{method, params}` without id) stream to clients that subscribed.
 */
export type Handler = (params: Record<string, unknown>, client: ControlClientHandle) => unknown

export interface ControlClientHandle {
  notify(method: string, params: unknown): void
  onClose(fn: () => void): void
}

/** The daemon's side of the control socket. */
export interface ControlServer {
  /**
   * Tells every attached client the node is stopping, ends their connections and stops
   * listening. Resolves at once: an attached `kith chat` or `kith watch` never holds a stop.
   */
  close(): Promise<void>
}

export async function startControlServer(
  path: string,
  handlers: Record<string, Handler>,
): Promise<ControlServer> {
  if (existsSync(path)) {
    if (await isListening(path)) {
      throw new KithError('io', `a kith node is already running for this KITH_HOME (${path})`)
    }
    // A socket file left by a node that died: nobody answers on it, so it is safe to replace.
    unlinkSync(path)
  }
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    serve(socket, handlers)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(path, () => {
      server.off('error', reject)
      resolve()
    })
  })
  chmodSync(path, 0o600)
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        for (const socket of sockets) {
          // A last line so the client can say why, then the end of the connection.
          socket.end(`${JSON.stringify({ method: 'stopping', params: {} })}\n`)
          socket.destroySoon()
        }
      }),
  }
}

function serve(socket: Socket, handlers: Record<string, Handler>): void {
  const closers: (() => void)[] = []
  const write = (msg: unknown) => {
    if (!socket.destroyed) socket.write(`${JSON.stringify(msg)}\n`)
  }
  const handle: ControlClientHandle = {
    notify: (method, params) => write({ method, params }),
    onClose: (fn) => closers.push(fn),
  }
  socket.on('close', () => closers.forEach((fn) => fn()))
  socket.on('error', () => socket.destroy())
  const lines = createInterface({ input: socket })
  // readline re-emits its input's errors: without a listener here, a client that left just as
  // the node said "stopping" (EPIPE) would be an uncaught exception.
  lines.on('error', () => socket.destroy())
  lines.on('line', (line) => {
    let req: { id?: unknown; method?: unknown; params?: unknown }
    try {
      req = JSON.parse(line) as typeof req
    } catch {
      write({ error: { code: 'invalid', message: 'not JSON' } })
      return
    }
    const handler = typeof req.method === 'string' ? handlers[req.method] : undefined
    if (handler === undefined) {
      write({
        id: req.id,
        error: { code: 'usage', message: `unknown method ${String(req.method)}` },
      })
      return
    }
    Promise.resolve()
      .then(() => handler((req.params ?? {}) as Record<string, unknown>, handle))
      .then(
        (result) => write({ id: req.id, result }),
        (err: unknown) =>
          write({
            id: req.id,
            error: {
              code: err instanceof KithError ? err.code : 'error',
              message: err instanceof Error ? err.message : String(err),
            },
          }),
      )
  })
}

function isListening(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection(path)
    s.once('connect', () => {
      s.destroy()
      resolve(true)
    })
    s.once('error', () => resolve(false))
  })
}

/** A CLI-side connection to the daemon. Every pending request is rejected when it closes. */
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
        error?: { code: string; message: string }
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
        if (msg.error) p.reject(new KithError(msg.error.code as KithErrorCode, msg.error.message))
        else p.resolve(msg.result)
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

  request<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    if (this.closed) return Promise.reject(new KithError('io', 'control connection is closed'))
    const id = this.nextId++
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject })
      this.socket.write(`${JSON.stringify({ id, method, params })}\n`)
    })
  }

  on(method: string, fn: (params: unknown) => void): void {
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
