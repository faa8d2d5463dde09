import { statSync, writeFileSync } from 'node:fs'
import { createConnection, type Socket } from 'node:net'
import { createInterface } from 'node:readline'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { KithError } from '../../src/errors.js'
import { homeFiles } from '../../src/identity/home.js'
import {
  startControlServer,
  type ControlClientHandle,
  type ControlServer,
} from '../../src/node/control.js'
import { tempDir } from '../helpers/tmp.js'

// The node's control socket, directly: newline-delimited JSON over a real Unix socket, read and
// written here by hand (not through the CLI's client), so the wire itself is what is checked.

/** A raw connection: send a line, read the lines that come back, in order. */
async function connect(path: string): Promise<{
  send: (msg: unknown) => void
  next: () => Promise<unknown>
  socket: Socket
}> {
  const socket = createConnection(path)
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve())
    socket.once('error', reject)
  })
  onTestFinished(() => {
    socket.destroy()
  })
  const queued: unknown[] = []
  const waiting: ((v: unknown) => void)[] = []
  createInterface({ input: socket }).on('line', (line) => {
    const msg = JSON.parse(line) as unknown
    const w = waiting.shift()
    if (w) w(msg)
    else queued.push(msg)
  })
  return {
    socket,
    send: (msg) => socket.write(typeof msg === 'string' ? `${msg}\n` : `${JSON.stringify(msg)}\n`),
    next: () =>
      queued.length > 0
        ? Promise.resolve(queued.shift())
        : new Promise((resolve) => waiting.push(resolve)),
  }
}

async function start(
  handlers: Parameters<typeof startControlServer>[1],
): Promise<{ path: string; server: ControlServer }> {
  const path = join(tempDir('kith-control-'), homeFiles.controlSocket)
  const server = await startControlServer(path, handlers)
  onTestFinished(() => server.close())
  return { path, server }
}

describe('control socket', () => {
  it('answers each request by id, with the error code a handler threw', async () => {
    const { path } = await start({
      echo: (p) => ({ got: p }),
      later: async () => {
        await Promise.resolve()
        return 'done'
      },
      refuse: () => {
        throw new KithError('restricted', 'not you')
      },
      broken: () => {
        throw new Error('boom')
      },
    })
    expect(statSync(path).mode & 0o777).toBe(0o600)
    const c = await connect(path)
    c.send({ id: 1, method: 'echo', params: { a: 1 } })
    expect(await c.next()).toEqual({ id: 1, result: { got: { a: 1 } } })
    c.send({ id: 2, method: 'later' })
    expect(await c.next()).toEqual({ id: 2, result: 'done' })
    c.send({ id: 3, method: 'refuse' })
    expect(await c.next()).toEqual({ id: 3, error: { code: 'restricted', message: 'not you' } })
    c.send({ id: 4, method: 'broken' })
    expect(await c.next()).toEqual({ id: 4, error: { code: 'error', message: 'boom' } })
    c.send({ id: 5, method: 'nope' })
    expect(await c.next()).toEqual({
      id: 5,
      error: { code: 'usage', message: 'unknown method nope' },
    })
    c.send('not json')
    expect(await c.next()).toEqual({ error: { code: 'invalid', message: 'not JSON' } })
  })

  it('streams notifications to a subscribed client and tells the handler when it leaves', async () => {
    let client: ControlClientHandle | undefined
    let left!: () => void
    const gone = new Promise<void>((resolve) => (left = resolve))
    const { path } = await start({
      subscribe: (_p, handle) => {
        client = handle
        handle.onClose(left)
        return { ok: true }
      },
    })
    const c = await connect(path)
    c.send({ id: 1, method: 'subscribe' })
    expect(await c.next()).toEqual({ id: 1, result: { ok: true } })
    client!.notify('chat', { text: 'hi' })
    expect(await c.next()).toEqual({ method: 'chat', params: { text: 'hi' } })
    c.socket.destroy()
    await gone
  })

  it('stops cleanly when a client has just left (no uncaught EPIPE)', async () => {
    const { path, server } = await start({})
    const c = await connect(path)
    c.socket.destroy()
    await server.close()
  })

  it('says "stopping" to attached clients when it closes, then ends their connections', async () => {
    const { path, server } = await start({})
    const c = await connect(path)
    const ended = new Promise<void>((resolve) => c.socket.once('close', () => resolve()))
    await server.close()
    expect(await c.next()).toEqual({ method: 'stopping', params: {} })
    await ended
  })

  it('refuses a second node on the same KITH_HOME, and replaces a socket file left by a dead one', async () => {
    const { path } = await start({})
    await expect(startControlServer(path, {})).rejects.toMatchObject({ code: 'io' })
    const stale = join(tempDir('kith-control-'), homeFiles.controlSocket)
    writeFileSync(stale, '')
    const server = await startControlServer(stale, { ping: () => 'pong' })
    onTestFinished(() => server.close())
    const c = await connect(stale)
    c.send({ id: 1, method: 'ping' })
    expect(await c.next()).toEqual({ id: 1, result: 'pong' })
  })
})
