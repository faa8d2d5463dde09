import { randomBytes, timingSafeEqual } from 'node:crypto'
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import type { Duplex } from 'node:stream'
import { WebSocketServer } from 'ws'
import { edgeAgentApp, type NodeApi } from '../acp/edge-agent.js'
import { KithError } from '../errors.js'
import { parseChannel } from '../events/chat.js'
import { connectNode } from './control-client.js'
import { acpSessionBook } from './acp-sessions.js'

/**
 * The ACP remote transport (WebSocket and Streamable HTTP, as the SDK's server implements the
 * RFD) that `kith up` serves on 127.0.0.1, so an ACP client that speaks it needs no `kith acp`
 * subprocess. `/acp/AGENT[@MACHINE]?channel=NAME` is `kith acp AGENT` for that connection.
 * A connection acts as this device, so it must prove it is this machine's user: the bearer token
 * in KITH_HOME/acp-token (0600). A request from a browser (any Origin header) and a Host other
 * than this address are refused, so a page in a tab gets nothing even on a DNS-rebound name.
 */

export const defaultAcpPort = 7449
export const acpTokenFile = 'acp-token'

/** The token clients present (`Authorization: Bearer …`), made on first use, 0600. */
export function acpToken(home: string): string {
  const path = join(home, acpTokenFile)
  if (!existsSync(path)) {
    writeFileSync(path, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' })
  }
  chmodSync(path, 0o600)
  return readFileSync(path, 'utf8').trim()
}

/** Why a request may not use the transport (status and text), or undefined when it may. */
export function acpRefusal(
  req: Pick<IncomingMessage, 'headers'>,
  port: number,
  token: string,
): { status: number; text: string } | undefined {
  const host = (req.headers.host ?? '').toLowerCase()
  if (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`)
    return { status: 421, text: `this server answers for 127.0.0.1:${port} only` }
  if (req.headers.origin !== undefined)
    return { status: 403, text: 'browsers may not use the ACP transport of a kith node' }
  const given = Buffer.from(req.headers.authorization ?? '')
  const want = Buffer.from(`Bearer ${token}`)
  if (given.length !== want.length || !timingSafeEqual(given, want))
    return { status: 401, text: `a bearer token is needed: the one in KITH_HOME/${acpTokenFile}` }
  return undefined
}

/** A control-socket client that connects on first use (a connection's agent app is made sync). */
function lazyNode(home: string): NodeApi & { close: () => void } {
  const conn = connectNode(home).then((c) => {
    if (c === undefined) throw new KithError('io', 'this node is not running')
    return c
  })
  // Observed by each request; one nobody makes is not an unhandled rejection.
  conn.catch(() => undefined)
  return {
    request: async (method, ...params) => (await conn).asNodeApi().request(method, ...params),
    on: (method, fn) => {
      void conn.then((c) => c.asNodeApi().on(method, fn))
    },
    close: () => {
      void conn.then((c) => c.close())
    },
  }
}

export interface AcpServerHandle {
  url: string
  port: number
  close: () => Promise<void>
}

export async function startAcpServer(opts: {
  home: string
  port: number
  log: (line: string) => void
}): Promise<AcpServerHandle> {
  const acp = await import('@agentclientprotocol/sdk')
  const { AcpServer } = await import('@agentclientprotocol/sdk/experimental/server')
  const { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } =
    await import('@agentclientprotocol/sdk/experimental/node')
  const token = acpToken(opts.home)
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4 * 1024 * 1024 })
  /** One SDK server per target (`claude@devbox?channel=acp`), made on its first request. */
  const servers = new Map<string, Promise<InstanceType<typeof AcpServer>>>()
  const serverFor = (target: string, channel: string) => {
    const key = `${target}#${channel}`
    let made = servers.get(key)
    if (made === undefined) {
      made = (async () => {
        const [name, machine] = target.split('@') as [string, string?]
        const probe = await connectNode(opts.home)
        if (probe === undefined) throw new KithError('io', 'this node is not running')
        try {
          const agent = await probe.request('agent', { name })
          if (machine !== undefined && machine !== agent.host)
            throw new KithError('not-found', `@${agent.name} does not run on ${machine}`)
          return new AcpServer({
            createAgent: () => {
              const node = lazyNode(opts.home)
              return edgeAgentApp(acp, {
                node,
                agent,
                channel,
                book: acpSessionBook(opts.home),
                log: opts.log,
                onClose: () => node.close(),
              })
            },
          })
        } finally {
          probe.close()
        }
      })()
      servers.set(key, made)
      // A target that failed is tried afresh next time (the agent may appear).
      made.catch(() => servers.delete(key))
    }
    return made
  }
  const target = (req: IncomingMessage): { agent: string; channel: string } | undefined => {
    const url = new URL(req.url ?? '/', 'http://x')
    const m = /^\/acp\/@?([^/@]+(?:@[^/@]+)?)$/.exec(url.pathname)
    if (m === null) return undefined
    return {
      agent: decodeURIComponent(m[1]!),
      channel: parseChannel(url.searchParams.get('channel') ?? 'acp'),
    }
  }
  let port = opts.port
  const fail = (res: ServerResponse, status: number, text: string) => {
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' })
    res.end(`${text}\n`)
  }
  const http = createServer((req, res) => {
    const refused = acpRefusal(req, port, token)
    if (refused !== undefined) return fail(res, refused.status, refused.text)
    const t = target(req)
    if (t === undefined) return fail(res, 404, 'the path is /acp/AGENT[@MACHINE]')
    serverFor(t.agent, t.channel).then(
      (server) => createNodeHttpHandler(server)(req, res),
      (err: unknown) => fail(res, 404, err instanceof Error ? err.message : String(err)),
    )
  })
  http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const refuse = (status: number, text: string) => {
      socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`)
    }
    const refused = acpRefusal(req, port, token)
    if (refused !== undefined) return refuse(refused.status, refused.text)
    const t = target(req)
    if (t === undefined) return refuse(404, 'the path is /acp/AGENT[@MACHINE]')
    serverFor(t.agent, t.channel).then(
      (server) => createNodeWebSocketUpgradeHandler(server, wss)(req, socket, head),
      (err: unknown) => refuse(404, err instanceof Error ? err.message : String(err)),
    )
  })
  try {
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject)
      http.listen(opts.port, '127.0.0.1', () => {
        http.off('error', reject)
        resolve()
      })
    })
  } catch (err) {
    throw new KithError(
      'io',
      (err as NodeJS.ErrnoException).code === 'EADDRINUSE'
        ? `port ${opts.port} on 127.0.0.1 is in use; pick another with --acp-port (0 picks a free one), or --no-acp`
        : `cannot serve ACP on 127.0.0.1:${opts.port}: ${String(err)}`,
      { cause: err },
    )
  }
  port = (http.address() as AddressInfo).port
  return {
    url: `ws://127.0.0.1:${port}/acp/`,
    port,
    close: async () => {
      await Promise.all(
        [...servers.values()].map((p) =>
          p.then(
            (s) => s.close(),
            () => undefined,
          ),
        ),
      )
      wss.close()
      await new Promise<void>((resolve) => {
        http.close(() => resolve())
        http.closeAllConnections()
      })
    },
  }
}
