import WebSocket from 'ws'
import { signAuthEvent } from '../../src/events/nip42.js'

export type Frame = unknown[]

/**
 * A deliberately plain WebSocket client for playing both honest and misbehaving peers: it sends
 * whatever it is told and lets tests wait for the frames they expect (never sleeps).
 */
export class RawClient {
  readonly frames: Frame[] = []
  private waiters: { match: (f: Frame) => boolean; resolve: (f: Frame) => void }[] = []
  closed: { code: number; reason: string } | undefined
  private closeWaiters: ((c: { code: number; reason: string }) => void)[] = []
  challenge = ''

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as Frame
      if (frame[0] === 'AUTH' && typeof frame[1] === 'string') this.challenge = frame[1]
      this.frames.push(frame)
      this.waiters = this.waiters.filter((w) => {
        if (!w.match(frame)) return true
        w.resolve(frame)
        return false
      })
    })
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() }
      for (const w of this.closeWaiters) w(this.closed)
    })
  }

  static async connect(url: string, opts: WebSocket.ClientOptions = {}): Promise<RawClient> {
    const ws = new WebSocket(url, opts)
    const client = new RawClient(ws)
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve())
      ws.once('error', reject)
    })
    await client.next((f) => f[0] === 'AUTH')
    return client
  }

  send(frame: Frame | string): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame))
  }

  /** The first frame (already received or future) that matches. */
  next(match: (f: Frame) => boolean, timeoutMs = 10_000): Promise<Frame> {
    const seen = this.frames.find(match)
    if (seen) {
      this.frames.splice(this.frames.indexOf(seen), 1)
      return Promise.resolve(seen)
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(`no matching frame in ${timeoutMs} ms; got ${JSON.stringify(this.frames)}`),
          ),
        timeoutMs,
      )
      this.waiters.push({
        match,
        resolve: (f) => {
          clearTimeout(timer)
          this.frames.splice(this.frames.indexOf(f), 1)
          resolve(f)
        },
      })
    })
  }

  ok(id: string, timeoutMs?: number): Promise<Frame> {
    return this.next((f) => f[0] === 'OK' && f[1] === id, timeoutMs)
  }

  /** Sends AUTH for `url` and returns the OK frame. */
  async auth(url: string, sk: Uint8Array, now?: number): Promise<Frame> {
    const event = signAuthEvent(url, this.challenge, sk, now)
    this.send(['AUTH', event])
    return this.ok(event.id)
  }

  /** Sends REQ and collects stored events up to EOSE (or the CLOSED frame). */
  async req(subId: string, ...filters: unknown[]): Promise<{ events: unknown[]; end: Frame }> {
    this.send(['REQ', subId, ...filters])
    const end = await this.next((f) => (f[0] === 'EOSE' || f[0] === 'CLOSED') && f[1] === subId)
    const events: unknown[] = []
    for (const f of [...this.frames]) {
      if (f[0] === 'EVENT' && f[1] === subId) {
        events.push(f[2])
        this.frames.splice(this.frames.indexOf(f), 1)
      }
    }
    return { events, end }
  }

  waitClosed(): Promise<{ code: number; reason: string }> {
    if (this.closed) return Promise.resolve(this.closed)
    return new Promise((resolve) => this.closeWaiters.push(resolve))
  }

  close(): void {
    this.ws.close()
  }
}
