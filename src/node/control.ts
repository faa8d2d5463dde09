import { chmodSync, existsSync, unlinkSync } from 'node:fs'
import { createConnection, createServer, type Server, type Socket } from 'node:net'
import { createInterface } from 'node:readline'
import { KithError } from '../errors.js'
import {
  controlParams,
  type ControlMethod,
  type ControlNotifications,
  type ControlParams,
  type ControlResult,
} from './control-methods.js'

/**
 * The local control socket (KITH_HOME/node.sock, 0600 inside the 0700 home) through which CLI
 * commands talk to the running daemon: newline-delimited JSON, one request per line,
 * `{id, method, params}` → `{id, result}` or `{id, error: {code, message, reason?}}`; notifications
 * (`{method, params}` without id) stream to clients that subscribed. The methods, their params
 * and results are `ControlMethods` (control-methods.ts).
 */
export type Handler = (params: Record<string, unknown>, client: ControlClientHandle) => unknown

export interface ControlClientHandle {
  /** A notification line to this client: `ControlNotifications` says what each carries. */
  notify(method: keyof ControlNotifications, params: unknown): void
  onClose(fn: () => void): void
}

/** The node's handlers, one per method of `ControlMethods`, each checked against its types. */
export type ControlHandlers = {
  [M in ControlMethod]: (
    params: ControlParams<M>,
    client: ControlClientHandle,
  ) => ControlResult<M> | Promise<ControlResult<M>>
}

/**
 * The node's typed handlers as the socket serves them: each request's params are read by the
 * method's reader (`controlParams`) first, so a wrong shape is answered with its coded error and
 * a handler only ever sees params of its type.
 */
export function checkedHandlers(handlers: ControlHandlers): Record<string, Handler> {
  const served: Record<string, Handler> = {}
  for (const method of Object.keys(handlers) as ControlMethod[])
    served[method] = checked(handlers, method)
  return served
}

function checked<M extends ControlMethod>(handlers: ControlHandlers, method: M): Handler {
  const read = controlParams[method] as (raw: unknown) => ControlParams<M>
  const handle = handlers[method] as ControlHandlers[M] &
    ((p: ControlParams<M>, c: ControlClientHandle) => unknown)
  return (raw, client) => handle(read(raw), client)
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
      // Untrusted until a typed handler's reader (checkedHandlers) has read it.
      .then(() => handler((req.params ?? {}) as Record<string, unknown>, handle))
      .then(
        (result) => write({ id: req.id, result }),
        (err: unknown) =>
          write({
            id: req.id,
            error: {
              code: err instanceof KithError ? err.code : 'error',
              message: err instanceof Error ? err.message : String(err),
              // The sub-code too (a params error's `bad-params`), so a client branches on it.
              ...(err instanceof KithError && err.reason !== undefined
                ? { reason: err.reason }
                : {}),
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
