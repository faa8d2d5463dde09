import WebSocket from 'ws'
import { generateSecretKey } from 'nostr-tools/pure'
import { parseEvent, signEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { PairError } from './protocol/errors.js'
import { parsePairMessage, type PairMessage } from './protocol/session.js'

/** Maps a hub's refusal on the pairing lane to the words both screens show. */
function laneError(reason: string): PairError {
  if (/another device/.test(reason)) return new PairError('third-party', reason)
  if (/already used/.test(reason)) return new PairError('reused', reason)
  if (/expired/.test(reason)) return new PairError('expired', reason)
  return new PairError('aborted', reason)
}

/**
 * One side's connection to a hub's pairing lane: kind-24140 events in room `pid`, each signed by
 * a throwaway key made for this pairing (the ephemeral ECDH key must stay hidden until REVEAL).
 * Messages from the other party queue up; a refusal, burn or disconnect fails every wait.
 */
export class PairingChannel {
  private readonly key = generateSecretKey()
  private readonly inbox: PairMessage[] = []
  private waiter: { resolve: (m: PairMessage) => void; reject: (e: Error) => void } | undefined
  private failure: PairError | undefined
  private readonly oks = new Map<string, { resolve: () => void; reject: (e: Error) => void }>()

  private constructor(
    private readonly ws: WebSocket,
    readonly pid: string,
  ) {
    ws.on('message', (data: Buffer) => this.onFrame(data.toString('utf8')))
    ws.on('close', () => this.fail(new PairError('aborted', 'the hub connection closed')))
    ws.on('error', (err) => this.fail(new PairError('aborted', err.message)))
  }

  static async open(url: string, pid: string, timeoutMs = 10_000): Promise<PairingChannel> {
    const ws = new WebSocket(url, { handshakeTimeout: timeoutMs, maxPayload: 64 * 1024 })
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve())
      ws.once('error', (err) =>
        reject(new PairError('aborted', `cannot reach the hub ${url}: ${err.message}`)),
      )
    })
    const channel = new PairingChannel(ws, pid)
    try {
      await new Promise<void>((resolve, reject) => {
        channel.subscribed = { resolve, reject }
        ws.send(JSON.stringify(['REQ', 'pair', { kinds: [Kind.Pairing], '#d': [pid] }]))
      })
    } catch (err) {
      // Refused (used, burnt or expired room): nothing more to say on this connection.
      ws.close()
      throw err
    }
    return channel
  }

  private subscribed: { resolve: () => void; reject: (e: Error) => void } | undefined

  private fail(err: PairError): void {
    if (this.failure) return
    this.failure = err
    this.subscribed?.reject(err)
    this.waiter?.reject(err)
    this.waiter = undefined
    for (const w of this.oks.values()) w.reject(err)
    this.oks.clear()
  }

  private onFrame(text: string): void {
    let msg: unknown[]
    try {
      msg = JSON.parse(text) as unknown[]
    } catch {
      // Not NIP-01; ignore the frame.
      return
    }
    if (!Array.isArray(msg)) return
    const [verb, a, b, c] = msg
    if (verb === 'EOSE' && a === 'pair') {
      this.subscribed?.resolve()
      this.subscribed = undefined
    } else if (verb === 'CLOSED' && a === 'pair') {
      this.fail(laneError(String(b)))
    } else if (verb === 'OK' && typeof a === 'string') {
      const w = this.oks.get(a)
      this.oks.delete(a)
      if (b === true) w?.resolve()
      else w?.reject(laneError(String(c)))
    } else if (verb === 'EVENT' && a === 'pair') {
      let content: unknown
      try {
        const event = parseEvent(b)
        content = JSON.parse(event.content)
      } catch {
        this.fail(new PairError('out-of-order', 'unreadable pairing event'))
        return
      }
      let m: PairMessage
      try {
        m = parsePairMessage(content)
      } catch (err) {
        this.fail(err as PairError)
        return
      }
      if (this.waiter) {
        this.waiter.resolve(m)
        this.waiter = undefined
      } else this.inbox.push(m)
    }
  }

  async send(m: PairMessage): Promise<void> {
    if (this.failure) throw this.failure
    const event = signEvent(
      {
        kind: Kind.Pairing,
        created_at: Math.floor(Date.now() / 1000),
        tags: [['d', this.pid]],
        content: JSON.stringify(m),
      },
      this.key,
    )
    await new Promise<void>((resolve, reject) => {
      this.oks.set(event.id, { resolve, reject })
      this.ws.send(JSON.stringify(['EVENT', event]))
    })
  }

  /** The next message from the other side, within `timeoutMs`. */
  next(timeoutMs: number): Promise<PairMessage> {
    if (this.failure) return Promise.reject(this.failure)
    const queued = this.inbox.shift()
    if (queued) return Promise.resolve(queued)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = undefined
        reject(new PairError('timeout'))
      }, timeoutMs)
      this.waiter = {
        resolve: (m) => {
          clearTimeout(timer)
          resolve(m)
        },
        reject: (e) => {
          clearTimeout(timer)
          reject(e)
        },
      }
    })
  }

  /** Best effort: tells the other side why, then closes. */
  async abort(reason: PairError['code']): Promise<void> {
    if (!this.failure && this.ws.readyState === this.ws.OPEN) {
      await this.send({ t: 'abort', reason }).catch(() => undefined)
    }
    this.close()
  }

  close(): void {
    this.ws.close()
  }
}
