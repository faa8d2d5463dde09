import WebSocket from 'ws'
import { KithError } from '../errors.js'
import { parseRelayFrame } from './frames.js'
import { parseEvent, type NostrEvent } from '../events/event.js'
import { signAuthEvent } from '../events/nip42.js'

export interface OkAnswer {
  ok: boolean
  message: string
}

interface Waiter {
  resolve: (value: unknown) => void
  reject: (err: Error) => void
  timer: NodeJS.Timeout
}

/**
 * One short-lived connection to a hub for CLI work: publish, authenticate, query. Every request
 * has a timeout, and a closed connection rejects every pending request. (The daemon's long-lived
 * links, with outbox and reconnects, build on this.)
 */
export class HubSession {
  private readonly oks = new Map<string, Waiter>()
  private readonly reqs = new Map<string, Waiter & { events: NostrEvent[] }>()
  private challenge: string | undefined
  private challengeWaiters: Waiter[] = []
  private closedError: KithError | undefined
  private nextSub = 1

  private constructor(
    readonly url: string,
    private readonly ws: WebSocket,
    private readonly timeoutMs: number,
  ) {
    ws.on('message', (data: Buffer) => this.onMessage(data.toString('utf8')))
    ws.on('close', (code, reason) => {
      this.fail(
        new KithError('io', `hub ${url} closed the connection (${code} ${reason.toString()})`),
      )
    })
    ws.on('error', (err) =>
      this.fail(new KithError('io', `hub ${url}: ${err.message}`, { cause: err })),
    )
  }

  static open(url: string, opts: { timeoutMs?: number } = {}): Promise<HubSession> {
    const timeoutMs = opts.timeoutMs ?? 5000
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { handshakeTimeout: timeoutMs, maxPayload: 4 * 1024 * 1024 })
      const onError = (err: Error) =>
        reject(new KithError('io', `cannot reach hub ${url}: ${err.message}`, { cause: err }))
      ws.once('error', onError)
      ws.once('open', () => {
        ws.off('error', onError)
        resolve(new HubSession(url, ws, timeoutMs))
      })
    })
  }

  private fail(err: KithError): void {
    if (this.closedError) return
    this.closedError = err
    for (const w of [...this.oks.values(), ...this.reqs.values(), ...this.challengeWaiters]) {
      clearTimeout(w.timer)
      w.reject(err)
    }
    this.oks.clear()
    this.reqs.clear()
    this.challengeWaiters = []
  }

  private onMessage(text: string): void {
    // A frame that is not NIP-01 is skipped; whatever it owed times out.
    const frame = parseRelayFrame(text)
    if (frame === undefined) return
    const [verb, a, b, c] = frame
    if (verb === 'AUTH' && typeof a === 'string') {
      this.challenge = a
      for (const w of this.challengeWaiters) {
        clearTimeout(w.timer)
        w.resolve(a)
      }
      this.challengeWaiters = []
    } else if (verb === 'OK' && typeof a === 'string') {
      const w = this.oks.get(a)
      if (w === undefined) return
      this.oks.delete(a)
      clearTimeout(w.timer)
      w.resolve({ ok: b === true, message: typeof c === 'string' ? c : '' })
    } else if (verb === 'EVENT' && typeof a === 'string') {
      const r = this.reqs.get(a)
      try {
        r?.events.push(parseEvent(b))
      } catch {
        // A malformed event from the hub is dropped; the verifier would refuse it anyway.
      }
    } else if ((verb === 'EOSE' || verb === 'CLOSED') && typeof a === 'string') {
      const r = this.reqs.get(a)
      if (r === undefined) return
      this.reqs.delete(a)
      clearTimeout(r.timer)
      if (verb === 'CLOSED')
        r.reject(new KithError('restricted', `hub refused the query: ${String(b)}`))
      else r.resolve(r.events)
      this.ws.send(JSON.stringify(['CLOSE', a]))
    }
  }

  private wait<T>(register: (w: Waiter) => void, what: string): Promise<T> {
    if (this.closedError) return Promise.reject(this.closedError)
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new KithError('io', `hub ${this.url} did not answer ${what} in ${this.timeoutMs} ms`),
          ),
        this.timeoutMs,
      )
      register({ resolve: resolve as (v: unknown) => void, reject, timer })
    })
  }

  private waitChallenge(): Promise<string> {
    if (this.challenge !== undefined) return Promise.resolve(this.challenge)
    return this.wait((w) => this.challengeWaiters.push(w), 'with an AUTH challenge')
  }

  publish(event: NostrEvent): Promise<OkAnswer> {
    const answer = this.wait<OkAnswer>(
      (w) => this.oks.set(event.id, w),
      `EVENT ${event.id.slice(0, 8)}`,
    )
    this.ws.send(JSON.stringify(['EVENT', event]))
    return answer
  }

  async auth(secretKey: Uint8Array): Promise<OkAnswer> {
    const challenge = await this.waitChallenge()
    const event = signAuthEvent(this.url, challenge, secretKey)
    const answer = this.wait<OkAnswer>((w) => this.oks.set(event.id, w), 'AUTH')
    this.ws.send(JSON.stringify(['AUTH', event]))
    return answer
  }

  query(...filters: Record<string, unknown>[]): Promise<NostrEvent[]> {
    const sub = `q${this.nextSub++}`
    const result = this.wait<NostrEvent[]>((w) => this.reqs.set(sub, { ...w, events: [] }), 'REQ')
    this.ws.send(JSON.stringify(['REQ', sub, ...filters]))
    return result
  }

  close(): void {
    this.fail(new KithError('io', 'session closed'))
    this.ws.close()
  }
}
