import WebSocket from 'ws'
import { generateSecretKey } from 'nostr-tools/pure'
import { parseEvent, signEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { PairError } from './protocol/errors.js'
import { parsePairMessage, type PairMessage } from './protocol/session.js'
import { laneError } from './relay-lane.js'

/** How long a last abort may wait for the hub's OK before the connection is closed anyway. */
const abortFlushMs = 2_000

/**
 * One side's connection to a hub's pairing lane: kind-24140 events in room `pid`, each signed by
 * a throwaway key made for this pairing (the ephemeral ECDH key must stay hidden until REVEAL).
 * Messages from the other party go to the listener in order (those that came before it was set
 * are queued); a refusal, a burn or a disconnect goes, once, to the failure listener.
 */
export class PairingChannel {
  private readonly key = generateSecretKey()
  private readonly queued: PairMessage[] = []
  private onMessage: ((m: PairMessage) => void) | undefined
  private onFailure: ((e: PairError) => void) | undefined
  private failure: PairError | undefined
  /** The failure came from this side (Ctrl-C, a timeout): the connection still works. */
  private stoppedHere = false
  private readonly oks = new Map<string, { resolve: () => void; reject: (e: Error) => void }>()
  private subscribed: { resolve: () => void; reject: (e: Error) => void } | undefined

  private constructor(
    private readonly ws: WebSocket,
    readonly pid: string,
  ) {
    ws.on('message', (data: Buffer) => this.onFrame(data.toString('utf8')))
    ws.on('close', () =>
      this.fail(new PairError('interrupted', 'the connection to the hub closed')),
    )
    ws.on('error', (err) => this.fail(new PairError('interrupted', err.message)))
  }

  static async open(url: string, pid: string, timeoutMs = 10_000): Promise<PairingChannel> {
    const ws = new WebSocket(url, { handshakeTimeout: timeoutMs, maxPayload: 64 * 1024 })
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve())
      ws.once('error', (err) =>
        reject(new PairError('interrupted', `cannot reach the hub ${url}: ${err.message}`)),
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

  /** Delivers every message from the other side to `onMessage`, and the first failure to `onFailure`. */
  listen(onMessage: (m: PairMessage) => void, onFailure: (e: PairError) => void): void {
    this.onMessage = onMessage
    this.onFailure = onFailure
    for (const m of this.queued.splice(0)) onMessage(m)
    if (this.failure) onFailure(this.failure)
  }

  /** Stops the exchange from this side (Ctrl-C, a timeout): every wait fails with `err`. */
  interrupt(err: PairError): void {
    if (this.failure) return
    this.stoppedHere = true
    this.fail(err)
  }

  private fail(err: PairError): void {
    if (this.failure) return
    this.failure = err
    this.subscribed?.reject(err)
    for (const w of this.oks.values()) w.reject(err)
    this.oks.clear()
    this.onFailure?.(err)
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
      let m: PairMessage
      try {
        m = parsePairMessage(JSON.parse(parseEvent(b).content))
      } catch (err) {
        // Anyone who knows the room id can post junk into it: a stop, never a security verdict.
        this.fail(
          err instanceof PairError
            ? err
            : new PairError('out-of-order', 'unreadable pairing event'),
        )
        return
      }
      if (this.failure) return
      if (this.onMessage) this.onMessage(m)
      else this.queued.push(m)
    }
  }

  /** Sends one message; resolves on the hub's OK, rejects with its refusal (its words kept). */
  async send(m: PairMessage): Promise<void> {
    if (this.failure) throw this.failure
    return this.post(m)
  }

  private post(m: PairMessage): Promise<void> {
    const event = signEvent(
      {
        kind: Kind.Pairing,
        created_at: Math.floor(Date.now() / 1000),
        tags: [['d', this.pid]],
        content: JSON.stringify(m),
      },
      this.key,
    )
    return new Promise<void>((resolve, reject) => {
      this.oks.set(event.id, { resolve, reject })
      this.ws.send(JSON.stringify(['EVENT', event]))
    })
  }

  /**
   * Best effort: tells the other side why (an `abort` the session made, authenticated when it
   * can be), waiting briefly for the hub to take it, then closes.
   */
  async abort(m: PairMessage): Promise<void> {
    if (this.ws.readyState === this.ws.OPEN && (this.failure === undefined || this.stoppedHere)) {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([
        this.post(m),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, abortFlushMs)
        }),
      ]).catch(() => undefined) // The hub refused even the abort: closing says the rest.
      clearTimeout(timer)
    }
    this.close()
  }

  close(): void {
    this.ws.close()
  }
}
