import { KithError } from '../errors.js'
import { parseEvent, type NostrEvent } from '../events/event.js'
import { parseRelayFrame } from './frames.js'

/**
 * What the client needs of a WebSocket: Node's `ws` and the browser's global `WebSocket` both
 * fit. The caller makes the socket (and so chooses TLS, limits and the URL); this module
 * imports no Node built-in, so the same client runs in a browser.
 */
export interface RelaySocket {
  readonly readyState: number
  send(data: string): void
  close(code?: number, reason?: string): void
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void
  addEventListener(type: 'open', listener: () => void): void
  addEventListener(type: 'close', listener: (event: { code: number; reason: string }) => void): void
  addEventListener(type: 'error', listener: (event: unknown) => void): void
}

/** `readyState` of an open socket (the same number in `ws` and in browsers). */
const OPEN = 1

export interface OkAnswer {
  ok: boolean
  message: string
}

export interface SubscriptionHandlers {
  onEvent: (event: NostrEvent) => void
  /** Stored events are all sent; live ones follow. */
  onEose?: () => void
  /**
   * The relay ended the subscription (`CLOSED`, reason `refused`, with the relay's own message as
   * `said`), or the connection closed.
   */
  onClosed?: (error: KithError, said?: string) => void
}

/** A NIP-77 reconciliation's side of the relay's frames. */
export interface NegHandlers {
  onMessage: (message: string) => void
  /** NEG-ERR's reason, or why the connection closed; the reconciliation is over. */
  onError: (reason: string) => void
}

export interface Subscription {
  readonly id: string
  close(): void
}

export interface RelayClientOptions {
  /** The URL the socket was opened to: named in errors and in NIP-42 AUTH events. */
  url: string
  /** How long a request (OK, query, challenge) may wait for its answer. */
  timeoutMs?: number
  onNotice?: (message: string) => void
  /** The connection closed (by either side); every pending request has been rejected. */
  onClose?: (error: KithError) => void
}

/**
 * A relay's OK or CLOSED message read once (NIP-01: a machine-readable prefix, `code: reason`):
 * `restricted: revoked: …` is `{ code: 'restricted', reason: 'revoked: …' }`. A message without
 * a prefix has code ''.
 */
export interface RelayVerdict {
  code: string
  reason: string
}

export function relayVerdict(message: string): RelayVerdict {
  const m = /^([a-z][a-z0-9-]*): ?([\s\S]*)$/.exec(message)
  return m === null ? { code: '', reason: message } : { code: m[1]!, reason: m[2]! }
}

/**
 * Whether a hub said this key is revoked (kith-hub, "AUTH": `restricted: revoked`, at AUTH or
 * when it ends a subscription). Final for a link: it stops retrying (the node still judges the
 * claim against its own grant book, grants/hub-revoked.ts).
 */
export function saysRevoked(message: string | undefined): boolean {
  if (message === undefined) return false
  const v = relayVerdict(message)
  return v.code === 'restricted' && /^revoked\b/.test(v.reason)
}

/** Whether an OK refusal only says the relay already holds the event. */
export function saysDuplicate(message: string): boolean {
  return relayVerdict(message).code === 'duplicate'
}

/** Why a request failed, as the reason sub-code of its KithError. */
export type RelayFailure = 'closed' | 'timeout' | 'refused' | 'malformed'

/** Kith's request timeout: long enough for a hub under load, short enough to tell a person. */
export const defaultRelayTimeoutMs = 10_000

interface Waiter<T> {
  resolve: (value: T) => void
  reject: (err: KithError) => void
  timer: ReturnType<typeof setTimeout>
}

/**
 * One NIP-01 (+ NIP-42) connection to a relay: EVENT/OK, REQ/EVENT/EOSE/CLOSED, AUTH challenges,
 * NOTICE. Every request has a timeout; when the connection closes every pending request is
 * rejected with `KithError('io', …, { reason: 'closed' })`. Events are shape-checked
 * (`parseEvent`); their signatures are the caller's to verify.
 */
export class RelayClient {
  readonly url: string
  private readonly timeoutMs: number
  private readonly oks = new Map<string, Waiter<OkAnswer>>()
  private readonly inFlight = new Map<string, Promise<OkAnswer>>()
  private readonly subs = new Map<string, SubscriptionHandlers>()
  private readonly negs = new Map<string, NegHandlers>()
  private challengeValue: string | undefined
  private challengeWaiters: Waiter<string | undefined>[] = []
  private closedError: KithError | undefined
  private nextSub = 1

  private constructor(
    private readonly socket: RelaySocket,
    private readonly opts: RelayClientOptions,
  ) {
    this.url = opts.url
    this.timeoutMs = opts.timeoutMs ?? defaultRelayTimeoutMs
    socket.addEventListener('message', (event) => {
      if (typeof event.data === 'string') this.onFrame(event.data)
      // Binary frames are not NIP-01: ignored, as any other frame that is not.
    })
    socket.addEventListener('close', (event) => {
      this.fail(
        new KithError(
          'io',
          `${this.url} closed the connection (${event.code}${event.reason ? ` ${event.reason}` : ''})`,
          { reason: 'closed' },
        ),
      )
    })
  }

  /** Wraps a socket once it is open; rejects (KithError 'io') when it fails to open. */
  static connect(socket: RelaySocket, opts: RelayClientOptions): Promise<RelayClient> {
    if (socket.readyState === OPEN) return Promise.resolve(new RelayClient(socket, opts))
    return new Promise((resolve, reject) => {
      let settled = false
      // The client is made before the socket opens, so an AUTH challenge sent with the open is
      // not missed.
      const client = new RelayClient(socket, opts)
      socket.addEventListener('open', () => {
        if (settled) return
        settled = true
        resolve(client)
      })
      const fail = (why: string) => {
        if (settled) return
        settled = true
        reject(new KithError('io', `cannot reach ${opts.url}: ${why}`, { reason: 'closed' }))
      }
      socket.addEventListener('error', (event) => fail(errorText(event)))
      socket.addEventListener('close', (event) => fail(`closed (${event.code})`))
    })
  }

  get closed(): boolean {
    return this.closedError !== undefined
  }

  /**
   * The relay's NIP-42 challenge: at once if it came, else the first within `waitMs`;
   * undefined when none comes (a relay without NIP-42).
   */
  challenge(waitMs = this.timeoutMs): Promise<string | undefined> {
    if (this.challengeValue !== undefined) return Promise.resolve(this.challengeValue)
    if (this.closedError !== undefined) return Promise.reject(this.closedError)
    return new Promise((resolve, reject) => {
      const waiter: Waiter<string | undefined> = {
        resolve,
        reject,
        timer: setTimeout(() => {
          this.challengeWaiters = this.challengeWaiters.filter((w) => w !== waiter)
          resolve(undefined)
        }, waitMs),
      }
      this.challengeWaiters.push(waiter)
    })
  }

  /** Sends an event; resolves with the relay's OK. The same event sent twice shares one answer. */
  publish(event: NostrEvent): Promise<OkAnswer> {
    const pending = this.inFlight.get(event.id)
    if (pending !== undefined) return pending
    const answer = this.waitOk(event.id, `EVENT ${event.id.slice(0, 12)}`).finally(() =>
      this.inFlight.delete(event.id),
    )
    this.inFlight.set(event.id, answer)
    this.write(['EVENT', event])
    return answer
  }

  /** Sends a signed kind-22242 AUTH event (NIP-42); resolves with the relay's OK. */
  auth(event: NostrEvent): Promise<OkAnswer> {
    const answer = this.waitOk(event.id, 'AUTH')
    this.write(['AUTH', event])
    return answer
  }

  /** Opens a subscription; events stream to `handlers` until it is closed by either side. */
  subscribe(
    filters: readonly Record<string, unknown>[],
    handlers: SubscriptionHandlers,
    id = `s${this.nextSub++}`,
  ): Subscription {
    if (this.closedError !== undefined) {
      const err = this.closedError
      queueMicrotask(() => handlers.onClosed?.(err))
      return { id, close: () => undefined }
    }
    this.subs.set(id, handlers)
    this.write(['REQ', id, ...filters])
    return {
      id,
      close: () => {
        if (!this.subs.delete(id)) return
        if (this.closedError === undefined) this.write(['CLOSE', id])
      },
    }
  }

  /** The stored events matching `filters` (REQ up to EOSE, then CLOSE). */
  query(
    filters: readonly Record<string, unknown>[],
    opts: { timeoutMs?: number } = {},
  ): Promise<NostrEvent[]> {
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs
    return new Promise((resolve, reject) => {
      const events: NostrEvent[] = []
      const timer = setTimeout(() => {
        sub.close()
        reject(
          new KithError('io', `${this.url} did not finish a query in ${timeoutMs} ms`, {
            reason: 'timeout',
          }),
        )
      }, timeoutMs)
      const sub = this.subscribe(filters, {
        onEvent: (e) => events.push(e),
        onEose: () => {
          clearTimeout(timer)
          sub.close()
          resolve(events)
        },
        onClosed: (err) => {
          clearTimeout(timer)
          reject(err)
        },
      })
    })
  }

  /**
   * NIP-77: opens a reconciliation under a fresh id with `filter` and the first message (hex);
   * the relay's messages and its NEG-ERR go to `handlers` (and a closed connection to onError).
   */
  openNeg(
    filter: Record<string, unknown>,
    initial: string,
    handlers: NegHandlers,
  ): { id: string; send: (message: string) => void; close: () => void } {
    const id = `neg${this.nextSub++}`
    if (this.closedError !== undefined) {
      handlers.onError(this.closedError.message)
      return { id, send: () => undefined, close: () => undefined }
    }
    this.negs.set(id, handlers)
    this.write(['NEG-OPEN', id, filter, initial])
    return {
      id,
      send: (message) => this.write(['NEG-MSG', id, message]),
      close: () => {
        if (!this.negs.delete(id)) return
        this.write(['NEG-CLOSE', id])
      },
    }
  }

  close(code = 1000, reason = ''): void {
    this.fail(new KithError('io', `connection to ${this.url} closed`, { reason: 'closed' }))
    this.socket.close(code, reason)
  }

  private write(frame: unknown[]): void {
    if (this.socket.readyState !== OPEN) return
    this.socket.send(JSON.stringify(frame))
  }

  private waitOk(id: string, what: string): Promise<OkAnswer> {
    if (this.closedError !== undefined) return Promise.reject(this.closedError)
    return new Promise((resolve, reject) => {
      this.oks.set(id, {
        resolve,
        reject,
        timer: setTimeout(() => {
          this.oks.delete(id)
          reject(
            new KithError('io', `${this.url} did not answer ${what} in ${this.timeoutMs} ms`, {
              reason: 'timeout',
            }),
          )
        }, this.timeoutMs),
      })
    })
  }

  private fail(err: KithError): void {
    if (this.closedError !== undefined) return
    this.closedError = err
    for (const w of [...this.oks.values(), ...this.challengeWaiters]) {
      clearTimeout(w.timer)
      w.reject(err)
    }
    this.oks.clear()
    this.challengeWaiters = []
    const subs = [...this.subs.values()]
    this.subs.clear()
    for (const s of subs) s.onClosed?.(err)
    const negs = [...this.negs.values()]
    this.negs.clear()
    for (const n of negs) n.onError(err.message)
    this.opts.onClose?.(err)
  }

  private onFrame(text: string): void {
    // A frame that is not NIP-01 is skipped; whatever it owed times out.
    const frame = parseRelayFrame(text)
    if (frame === undefined) return
    const [verb, a, b, c] = frame
    switch (verb) {
      case 'AUTH':
        if (typeof a !== 'string') return
        this.challengeValue = a
        for (const w of this.challengeWaiters) {
          clearTimeout(w.timer)
          w.resolve(a)
        }
        this.challengeWaiters = []
        return
      case 'OK': {
        const w = typeof a === 'string' ? this.oks.get(a) : undefined
        if (w === undefined) return
        this.oks.delete(a as string)
        clearTimeout(w.timer)
        w.resolve({ ok: b === true, message: typeof c === 'string' ? c : '' })
        return
      }
      case 'EVENT': {
        const sub = typeof a === 'string' ? this.subs.get(a) : undefined
        if (sub === undefined) return
        let event: NostrEvent
        try {
          event = parseEvent(b)
        } catch {
          // A malformed event is dropped here; the caller's verifier would refuse it anyway.
          return
        }
        sub.onEvent(event)
        return
      }
      case 'EOSE':
        if (typeof a === 'string') this.subs.get(a)?.onEose?.()
        return
      case 'CLOSED': {
        if (typeof a !== 'string') return
        const sub = this.subs.get(a)
        if (sub === undefined) return
        this.subs.delete(a)
        sub.onClosed?.(
          new KithError('restricted', `${this.url} closed ${a}: ${String(b)}`, {
            reason: 'refused',
          }),
          String(b),
        )
        return
      }
      case 'NOTICE':
        this.opts.onNotice?.(String(a))
        return
      case 'NEG-MSG':
        if (typeof a === 'string' && typeof b === 'string') this.negs.get(a)?.onMessage(b)
        return
      case 'NEG-ERR': {
        const n = typeof a === 'string' ? this.negs.get(a) : undefined
        if (n === undefined) return
        this.negs.delete(a as string)
        n.onError(String(b))
        return
      }
      default:
    }
  }
}

function errorText(event: unknown): string {
  const e = event as { message?: unknown; error?: { message?: unknown } } | null
  const message = e?.message ?? e?.error?.message
  return typeof message === 'string' && message !== '' ? message : 'connection failed'
}
