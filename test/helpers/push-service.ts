import { createECDH, randomBytes, type ECDH } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import ece from 'http_ece'
import { onTestFinished } from 'vitest'
import type { WebPushSubscription } from '../../src/events/push.js'

/** The test TLS certificate a node trusts through NODE_EXTRA_CA_CERTS. */
export const testCertPath = fileURLToPath(new URL('../fixtures/tls/cert.pem', import.meta.url))
const keyPath = fileURLToPath(new URL('../fixtures/tls/key.pem', import.meta.url))

export interface Received {
  path: string
  headers: IncomingMessage['headers']
  body: Buffer
  status: number
}

/**
 * A local HTTP(S) endpoint that records every request and answers with `answer(n)` (the n-th
 * request, from 0): a push service stand-in, an ntfy server, a webhook. Tests wait on `next`.
 */
export interface Endpoint {
  url: string
  received: Received[]
  /** Resolves with the request at index `i` once it has arrived. */
  nth(i: number, timeoutMs?: number): Promise<Received>
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  return (server.address() as AddressInfo).port
}

export async function startEndpoint(
  opts: { tls?: boolean; answer?: (n: number) => number } = {},
): Promise<Endpoint> {
  const received: Received[] = []
  const waiters: { i: number; resolve: (r: Received) => void }[] = []
  const handler = (req: IncomingMessage, res: import('node:http').ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const status = opts.answer?.(received.length) ?? 201
      const r: Received = {
        path: req.url ?? '/',
        headers: req.headers,
        body: Buffer.concat(chunks),
        status,
      }
      received.push(r)
      res.writeHead(status).end(status >= 400 ? 'refused by the test' : '')
      for (const w of [...waiters])
        if (received.length > w.i) {
          waiters.splice(waiters.indexOf(w), 1)
          w.resolve(received[w.i]!)
        }
    })
  }
  const server = opts.tls
    ? createHttpsServer({ key: readFileSync(keyPath), cert: readFileSync(testCertPath) }, handler)
    : createHttpServer(handler)
  const port = await listen(server)
  return {
    url: `${opts.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    received,
    nth: (i, timeoutMs = 30_000) => {
      if (received.length > i) return Promise.resolve(received[i]!)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `request ${i} did not arrive in ${timeoutMs} ms (${received.length} so far)`,
              ),
            ),
          timeoutMs,
        )
        waiters.push({
          i,
          resolve: (r) => {
            clearTimeout(timer)
            resolve(r)
          },
        })
      })
    },
  }
}

/** A browser's side of a Web Push subscription: the keys a push is encrypted to (RFC 8291). */
export interface TestSubscription {
  subscription: WebPushSubscription
  ecdh: ECDH
  auth: Buffer
  /** Decrypts a push request's body (aes128gcm) with this subscription's keys. */
  open(body: Buffer): string
}

export function testSubscription(endpoint: string): TestSubscription {
  const ecdh = createECDH('prime256v1')
  ecdh.generateKeys()
  const auth = randomBytes(16)
  return {
    subscription: {
      endpoint,
      keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: auth.toString('base64url') },
    },
    ecdh,
    auth,
    open: (body) =>
      ece
        .decrypt(body, {
          version: 'aes128gcm',
          privateKey: ecdh,
          authSecret: auth.toString('base64url'),
        })
        .toString('utf8'),
  }
}
