import { describe, expect, it, onTestFinished } from 'vitest'
import WebSocket, { WebSocketServer } from 'ws'
import { generateSecretKey } from 'nostr-tools/pure'
import { KithError } from '../../src/errors.js'
import { signEvent, type NostrEvent } from '../../src/events/event.js'
import { RelayClient } from '../../src/link/relay-client.js'

/** A real WebSocket server on 127.0.0.1 port 0 whose behaviour each test scripts. */
async function peer(onFrame: (frame: unknown[], socket: WebSocket) => void) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()))
  const sockets: WebSocket[] = []
  wss.on('connection', (socket) => {
    sockets.push(socket)
    socket.on('message', (data: Buffer) =>
      onFrame(JSON.parse(data.toString()) as unknown[], socket),
    )
  })
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.terminate()
        wss.close(() => resolve())
      }),
  )
  const { port } = wss.address() as { port: number }
  return { url: `ws://127.0.0.1:${port}`, sockets, wss }
}

async function connect(url: string, timeoutMs = 5000): Promise<RelayClient> {
  const client = await RelayClient.connect(new WebSocket(url), { url, timeoutMs })
  onTestFinished(() => client.close())
  return client
}

const event = (content = 'hi'): NostrEvent =>
  signEvent(
    { kind: 1, created_at: Math.floor(Date.now() / 1000), tags: [], content },
    generateSecretKey(),
  )

async function rejection(p: Promise<unknown>): Promise<KithError> {
  try {
    await p
  } catch (err) {
    if (err instanceof KithError) return err
    throw err
  }
  throw new Error('expected a rejection')
}

describe('RelayClient', () => {
  it('publishes and resolves with the OK; the same event twice shares one answer', async () => {
    let seen = 0
    const p = await peer((frame, socket) => {
      if (frame[0] !== 'EVENT') return
      seen++
      const e = frame[1] as NostrEvent
      socket.send(JSON.stringify(['OK', e.id, false, 'blocked: no']))
    })
    const client = await connect(p.url)
    const e = event()
    const [a, b] = await Promise.all([client.publish(e), client.publish(e)])
    expect(a).toEqual({ ok: false, message: 'blocked: no' })
    expect(b).toBe(a)
    expect(seen).toBe(1)
  })

  it('queries to EOSE, skipping malformed frames and events, then closes the subscription', async () => {
    const good = event('good')
    const closed: string[] = []
    const p = await peer((frame, socket) => {
      if (frame[0] === 'CLOSE') closed.push(frame[1] as string)
      if (frame[0] !== 'REQ') return
      const sub = frame[1] as string
      socket.send('not json')
      socket.send(JSON.stringify({ not: 'an array' }))
      socket.send(JSON.stringify(['EVENT', sub, { ...good, id: 'short' }]))
      socket.send(JSON.stringify(['EVENT', sub, good]))
      socket.send(JSON.stringify(['EOSE', sub]))
    })
    const client = await connect(p.url)
    expect(await client.query([{ kinds: [1] }])).toEqual([good])
    await expect.poll(() => closed.length).toBe(1)
  })

  it('rejects a refused query with restricted/refused', async () => {
    const p = await peer((frame, socket) => {
      if (frame[0] === 'REQ') socket.send(JSON.stringify(['CLOSED', frame[1], 'auth-required: no']))
    })
    const client = await connect(p.url)
    const err = await rejection(client.query([{ kinds: [1] }]))
    expect([err.code, err.reason]).toEqual(['restricted', 'refused'])
    expect(err.message).toMatch(/auth-required: no/)
  })

  it('times out a request the relay never answers, with io/timeout', async () => {
    const p = await peer(() => undefined)
    const client = await connect(p.url, 200)
    const err = await rejection(client.publish(event()))
    expect([err.code, err.reason]).toEqual(['io', 'timeout'])
  })

  it('rejects every pending request with io/closed when the connection closes', async () => {
    const p = await peer(() => undefined)
    const client = await connect(p.url)
    const closedSubs: KithError[] = []
    client.subscribe([{ kinds: [1] }], {
      onEvent: () => undefined,
      onClosed: (e) => closedSubs.push(e),
    })
    const pending = [
      client.publish(event()),
      client.query([{ kinds: [1] }]),
      client.publish(event('2')),
    ]
    await expect.poll(() => p.sockets.length).toBe(1)
    p.sockets[0]!.close(1011, 'going away')
    for (const r of pending) {
      const err = await rejection(r)
      expect([err.code, err.reason]).toEqual(['io', 'closed'])
      expect(err.message).toMatch(/1011 going away/)
    }
    expect(closedSubs.map((e) => e.reason)).toEqual(['closed'])
    // After the close, new requests fail at once the same way.
    expect((await rejection(client.publish(event('3')))).reason).toBe('closed')
  })

  it('takes the AUTH challenge sent with the open, and says undefined when none comes', async () => {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()))
    wss.on('connection', (socket) => socket.send(JSON.stringify(['AUTH', 'c0ffee'])))
    onTestFinished(() => new Promise<void>((resolve) => wss.close(() => resolve())))
    const url = `ws://127.0.0.1:${(wss.address() as { port: number }).port}`
    const client = await connect(url)
    expect(await client.challenge()).toBe('c0ffee')
    const silent = await peer(() => undefined)
    expect(await (await connect(silent.url)).challenge(50)).toBeUndefined()
  })

  it('fails to connect with io/closed when nothing listens', async () => {
    const p = await peer(() => undefined)
    const url = p.url
    await new Promise<void>((resolve) => p.wss.close(() => resolve()))
    const ws = new WebSocket(url)
    ws.on('error', () => undefined)
    const err = await rejection(RelayClient.connect(ws, { url }))
    expect([err.code, err.reason]).toEqual(['io', 'closed'])
  })
})
