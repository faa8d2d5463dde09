import WebSocket from 'ws'
import { KithError } from '../errors.js'
import { parseRelayFrame } from './frames.js'
import { parseEvent, type NostrEvent } from '../events/event.js'
import { signAuthEvent } from '../events/nip42.js'
import type { OkAnswer } from './hub-session.js'

export type LinkState =
  | 'connecting'
  | 'authenticating'
  | 'catching-up'
  | 'live'
  | 'waiting'
  | 'stopped'
  /** The hub refused this device's AUTH as revoked: retrying cannot help, so the link stops. */
  | 'revoked'

export interface LinkOptions {
  url: string
  deviceSecret: Uint8Array
  /** Grants the hub needs before this device may AUTH, founder first (published before AUTH). */
  chain: () => NostrEvent[]
  /** Kinds followed live and caught up from the cursor. */
  kinds: number[]
  /** Kinds fetched whole on every connect (grants, revocations, profiles): small and vital. */
  fullKinds: number[]
  /** More live-only filters (e.g. observer frames addressed to this device). */
  extraLive?: Record<string, unknown>[]
  cursor: () => number | undefined
  saveCursor: (since: number) => void
  /** Receives events from the hub; catch-up waits for each page to be processed. */
  deliver: (events: NostrEvent[]) => Promise<void>
  onLive?: () => void
  /** The hub refused AUTH because this device's grant is revoked (its person was removed). */
  onRevoked?: (message: string) => void
  log: (line: string) => void
  /** Catch-up starts this long before the cursor, so late or skewed events are not missed. */
  overlapSeconds?: number
  /** Without a cursor, history starts this far back. */
  firstSyncSeconds?: number
  pageSize?: number
  now?: () => number
  /** Extra, non-Kith relays need no AUTH. */
  auth?: boolean
}

interface Pending {
  resolve: (v: OkAnswer) => void
  reject: (e: Error) => void
  timer: NodeJS.Timeout
}

const requestTimeoutMs = 10_000
/** Kith hubs send their challenge on connect; a relay silent this long has no NIP-42. */
const challengeWaitMs = 3_000

/**
 * A long-lived link to one hub: connect, publish this device's chain, AUTH, subscribe live
 * (limit 0: every new event whatever its created_at), catch up from the cursor with overlap in
 * pages, then stay live; on any failure reconnect with jittered backoff. Never `since=now`: a gap
 * is always caught up from the last cursor.
 */
export class HubLink {
  state: LinkState = 'connecting'
  lastError: string | undefined
  /** Round trip of the last ping, in ms: the link's lag. */
  rttMs: number | undefined
  connectedAt: number | undefined
  private ws: WebSocket | undefined
  private attempt = 0
  private retryTimer: NodeJS.Timeout | undefined
  private pingTimer: NodeJS.Timeout | undefined
  private cursorTimer: NodeJS.Timeout | undefined
  private readonly oks = new Map<string, Pending>()
  private readonly subs = new Map<string, { events: NostrEvent[]; done: (e?: Error) => void }>()
  private liveBatch: NostrEvent[] = []
  private liveFlush: NodeJS.Immediate | undefined
  private challenge: ((c: string) => void) | undefined
  private nextSub = 1
  private stopped = false
  private readonly now: () => number

  constructor(private readonly opts: LinkOptions) {
    this.now = opts.now ?? (() => Math.floor(Date.now() / 1000))
  }

  get url(): string {
    return this.opts.url
  }

  get authenticated(): boolean {
    return this.state === 'catching-up' || this.state === 'live'
  }

  start(): void {
    this.stopped = false
    this.connect()
  }

  stop(): void {
    this.stopped = true
    this.setState('stopped')
    clearTimeout(this.retryTimer)
    this.ws?.close(1000, 'node stopping')
    this.teardown(new KithError('io', 'link stopped'))
  }

  /** Sends an event and resolves with the hub's OK. Rejects when the link is not authenticated. */
  publish(event: NostrEvent): Promise<OkAnswer> {
    if (!this.authenticated || this.ws === undefined) {
      return Promise.reject(new KithError('io', `not connected to ${this.url}`))
    }
    return this.sendEvent(this.ws, event)
  }

  /** In-flight EVENTs by id: sending the same event again waits for the same OK. */
  private readonly inFlight = new Map<string, Promise<OkAnswer>>()

  private sendEvent(ws: WebSocket, event: NostrEvent): Promise<OkAnswer> {
    // A second send of an event still waiting for its OK must not orphan the first waiter
    // (its promise would never settle): both get the one answer.
    const pending = this.inFlight.get(event.id)
    if (pending !== undefined) return pending
    const answer = new Promise<OkAnswer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.oks.delete(event.id)
        reject(new KithError('io', `${this.url} did not answer EVENT in ${requestTimeoutMs} ms`))
      }, requestTimeoutMs)
      this.oks.set(event.id, { resolve, reject, timer })
    }).finally(() => this.inFlight.delete(event.id))
    this.inFlight.set(event.id, answer)
    ws.send(JSON.stringify(['EVENT', event]))
    return answer
  }

  private setState(state: LinkState): void {
    this.state = state
  }

  private connect(): void {
    if (this.stopped) return
    this.setState('connecting')
    this.pendingChallenge = undefined
    this.challenge = undefined
    const ws = new WebSocket(this.opts.url, {
      handshakeTimeout: requestTimeoutMs,
      maxPayload: 16 * 1024 * 1024,
    })
    this.ws = ws
    ws.on('message', (data: Buffer) => this.onMessage(data.toString('utf8')))
    ws.on('pong', () => {
      if (this.pingSentAt !== undefined) this.rttMs = Date.now() - this.pingSentAt
      this.pingSentAt = undefined
    })
    ws.once('open', () => {
      this.run(ws).catch((err: unknown) => {
        this.lastError = err instanceof Error ? err.message : String(err)
        this.opts.log(`${this.url}: ${this.lastError}`)
        ws.terminate()
      })
    })
    ws.on('error', (err) => {
      this.lastError = err.message
    })
    ws.once('close', () => {
      if (this.ws === ws) this.ws = undefined
      this.teardown(new KithError('io', `connection to ${this.url} closed`))
      this.scheduleReconnect()
    })
  }

  private pingSentAt: number | undefined

  private teardown(err: Error): void {
    clearInterval(this.pingTimer)
    clearInterval(this.cursorTimer)
    for (const p of this.oks.values()) {
      clearTimeout(p.timer)
      p.reject(err)
    }
    this.oks.clear()
    for (const s of this.subs.values()) s.done(err)
    this.subs.clear()
    this.liveBatch = []
    this.connectedAt = undefined
  }

  /** Stops for good: a revoked key stays revoked (kith-grants), so reconnecting is noise. */
  private revoked(message: string): void {
    this.stopped = true
    this.setState('revoked')
    clearTimeout(this.retryTimer)
    this.opts.onRevoked?.(message)
  }

  private scheduleReconnect(): void {
    if (this.stopped) return
    this.setState('waiting')
    // Exponential from 0.5 s to 20 s, jittered to 50-100% so many nodes do not return in step.
    const base = Math.min(20_000, 500 * 2 ** this.attempt)
    const delay = Math.round(base * (0.5 + Math.random() / 2))
    this.attempt = Math.min(this.attempt + 1, 10)
    this.retryTimer = setTimeout(() => this.connect(), delay)
  }

  private async run(ws: WebSocket): Promise<void> {
    const startedAt = this.now()
    // Heartbeat: a link that stops answering pings is dropped and reconnected.
    this.pingTimer = setInterval(() => {
      if (this.pingSentAt !== undefined) {
        this.lastError = 'hub stopped answering pings'
        ws.terminate()
        return
      }
      this.pingSentAt = Date.now()
      ws.ping()
    }, 15_000)
    if (this.opts.auth !== false) {
      this.setState('authenticating')
      const challenge = await this.waitChallenge()
      if (challenge === undefined) {
        // A plain NIP-01 relay (no NIP-42): follow it unauthenticated; every event from it is
        // still verified and authorized by this node before it is stored.
        this.opts.log(`${this.url} sent no AUTH challenge: using it as an open relay`)
      } else {
        for (const e of this.opts.chain()) {
          const r = await this.sendEvent(ws, e)
          if (!r.ok && !r.message.startsWith('duplicate:')) {
            this.opts.log(`${this.url} refused a grant on this device's chain: ${r.message}`)
          }
        }
        const auth = signAuthEvent(this.url, challenge, this.opts.deviceSecret)
        ws.send(JSON.stringify(['AUTH', auth]))
        const answer = await new Promise<OkAnswer>((resolve, reject) => {
          const timer = setTimeout(
            () => reject(new KithError('io', 'AUTH not answered')),
            requestTimeoutMs,
          )
          this.oks.set(auth.id, { resolve, reject, timer })
        })
        if (!answer.ok) {
          if (answer.message.startsWith('restricted: revoked')) this.revoked(answer.message)
          throw new KithError('restricted', `AUTH refused: ${answer.message}`)
        }
      }
    }
    this.connectedAt = startedAt
    this.setState('catching-up')
    await this.subscribe(
      ws,
      'live',
      [
        { kinds: [...this.opts.kinds, ...this.opts.fullKinds], limit: 0 },
        ...(this.opts.extraLive ?? []),
      ],
      true,
    )
    this.opts.onLive?.()
    await this.page(ws, { kinds: this.opts.fullKinds }, startedAt)
    const cursor = this.opts.cursor()
    const since =
      cursor === undefined
        ? Math.max(0, startedAt - (this.opts.firstSyncSeconds ?? 7 * 86400))
        : Math.max(0, cursor - (this.opts.overlapSeconds ?? 3600))
    const t0 = Date.now()
    const caught = await this.page(ws, { kinds: this.opts.kinds, since }, startedAt)
    this.opts.saveCursor(startedAt)
    this.opts.log(
      `caught up with ${this.url}: ${caught} events in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
    )
    this.setState('live')
    this.attempt = 0
    this.lastError = undefined
    // While live, everything arriving is seen; move the cursor along.
    this.cursorTimer = setInterval(() => this.opts.saveCursor(this.now()), 30_000)
  }

  /**
   * Pages backwards from `until` through everything matching `filter`, newest first, each page
   * delivered (and processed) before the next is asked for. A page full of one second's events
   * is stepped past with a warning: NIP-01 has no finer cursor.
   */
  private async page(
    ws: WebSocket,
    filter: Record<string, unknown>,
    until: number,
  ): Promise<number> {
    const size = this.opts.pageSize ?? 2000
    let upper = until
    let total = 0
    for (;;) {
      const events = await this.subscribe(
        ws,
        `cu${this.nextSub++}`,
        [{ ...filter, until: upper, limit: size }],
        false,
      )
      await this.opts.deliver(events)
      total += events.length
      if (events.length < size) return total
      // `until` is inclusive: the boundary second is asked for again and duplicates are dropped
      // downstream. A page that does not get past its upper second is stepped over.
      const oldest = events.reduce((m, e) => Math.min(m, e.created_at), upper)
      if (oldest >= upper) {
        this.opts.log(
          `${this.url}: more than ${size} events at ${oldest}; stepping past that second`,
        )
        upper = oldest - 1
      } else upper = oldest
      if (filter.since !== undefined && upper < (filter.since as number)) return total
    }
  }

  /** REQ → events up to EOSE. A `keep` subscription stays open and streams live events. */
  private subscribe(
    ws: WebSocket,
    id: string,
    filters: unknown[],
    keep: boolean,
  ): Promise<NostrEvent[]> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.subs.delete(id)
        reject(new KithError('io', `${this.url} did not finish REQ ${id}`))
      }, 60_000)
      this.subs.set(id, {
        events: [],
        done: (err) => {
          clearTimeout(timer)
          const sub = this.subs.get(id)
          if (!keep || err) this.subs.delete(id)
          if (err) reject(err)
          else resolve(sub?.events ?? [])
          if (sub && keep) sub.events = []
          if (!keep && !err) ws.send(JSON.stringify(['CLOSE', id]))
        },
      })
      ws.send(JSON.stringify(['REQ', id, ...filters]))
    })
  }

  /** The hub's NIP-42 challenge, or undefined when none comes (a relay without NIP-42). */
  private waitChallenge(): Promise<string | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(undefined), challengeWaitMs)
      this.challenge = (c) => {
        clearTimeout(timer)
        resolve(c)
      }
      if (this.pendingChallenge !== undefined) this.challenge(this.pendingChallenge)
    })
  }

  private pendingChallenge: string | undefined

  private onMessage(text: string): void {
    // A frame that is not NIP-01 is skipped; whatever it owed times out.
    const frame = parseRelayFrame(text)
    if (frame === undefined) return
    const [verb, a, b, c] = frame
    switch (verb) {
      case 'AUTH':
        if (typeof a === 'string') {
          this.pendingChallenge = a
          this.challenge?.(a)
        }
        return
      case 'OK': {
        const p = typeof a === 'string' ? this.oks.get(a) : undefined
        if (p === undefined) return
        this.oks.delete(a as string)
        clearTimeout(p.timer)
        p.resolve({ ok: b === true, message: typeof c === 'string' ? c : '' })
        return
      }
      case 'EVENT': {
        const sub = typeof a === 'string' ? this.subs.get(a) : undefined
        if (sub === undefined) return
        let event: NostrEvent
        try {
          event = parseEvent(b)
        } catch {
          this.opts.log(`${this.url}: dropped a malformed event`)
          return
        }
        if (a === 'live') this.queueLive(event)
        else sub.events.push(event)
        return
      }
      case 'EOSE':
        if (typeof a === 'string') this.subs.get(a)?.done()
        return
      case 'CLOSED':
        if (typeof a === 'string') {
          const sub = this.subs.get(a)
          sub?.done(new KithError('restricted', `${this.url} closed ${a}: ${String(b)}`))
          if (a === 'live') this.ws?.terminate()
        }
        return
      case 'NOTICE':
        this.opts.log(`${this.url} says: ${String(a)}`)
        return
      default:
    }
  }

  /** Live events are handed over in small batches, one per turn of the event loop. */
  private queueLive(event: NostrEvent): void {
    this.liveBatch.push(event)
    this.liveFlush ??= setImmediate(() => {
      this.liveFlush = undefined
      const batch = this.liveBatch
      this.liveBatch = []
      this.opts
        .deliver(batch)
        .catch((err: unknown) => this.opts.log(`processing live events: ${String(err)}`))
    })
  }
}
