import {
  authorityFilter,
  catchUpSince,
  Kind,
  pageBackwards,
  reconnectDelayMs,
  authenticate,
  defaultRelayTimeoutMs,
  RelayClient,
  saysRevoked,
  withConnectTicket,
  type KithError,
  type NostrEvent,
  type OkAnswer,
  type Subscription,
} from '../../../browser-core.js'
import { offline } from './network.js'

export type LinkState =
  | 'connecting'
  | 'authenticating'
  | 'catching-up'
  | 'live'
  | 'waiting'
  | 'stopped'
  /** The hub refused this device as revoked: retrying cannot help. */
  | 'revoked'

export interface LinkOptions {
  url: string
  secret: Uint8Array
  pubkey: string
  /** This device's grants, founder first: published before AUTH (kith-chat/1, step 2). */
  chain: () => NostrEvent[]
  /** Followed live and caught up from the cursor. */
  kinds: number[]
  /**
   * The authority kinds (profiles, grants, revocations, definitions, envelopes): fetched whole
   * the first time, then only what is new since `authorityCursor` (catch-up.ts).
   */
  fullKinds: number[]
  /** The start of the last connect whose authority fetch completed (kept across reloads). */
  authorityCursor: number | undefined
  saveAuthorityCursor: (since: number) => void
  deliver: (events: NostrEvent[], from: string) => void
  /** Where catch-up starts (kept across reloads): the last time this hub was followed live. */
  cursor: number | undefined
  saveCursor: (since: number) => void
  onState: (link: BrowserLink) => void
  onLive: (link: BrowserLink) => void
  onRevoked: (message: string) => void
  log: (line: string) => void
}

/** How long a request may wait for its answer: the one default (link/relay-client.ts). */
const requestTimeoutMs = defaultRelayTimeoutMs
/**
 * Browsers cannot send WebSocket pings: a REQ answered at once (limit 0) every 25 s tells a dead
 * connection (a sleeping laptop, a dropped network) from a quiet one.
 */
const heartbeatMs = 25_000
/** While live, the cursor moves along this often. */
const cursorMoveMs = 30_000

/**
 * The browser's link to one hub, as a node's (kith-chat/1, "A node's link to a hub"): connect,
 * publish this device's chain, AUTH, subscribe live (limit 0) with the observer frames addressed
 * to this device, fetch the authority kinds (whole the first time, then what is new since the
 * authority cursor), catch up from the cursor (an hour of overlap) in
 * pages, stay live; reconnect with jittered backoff after any failure. The cursor is kept in
 * IndexedDB with the events: a device new to the fleet catches up the last 7 days, as a new
 * node does.
 */
export class BrowserLink {
  state: LinkState = 'connecting'
  lastError: string | undefined
  private client: RelayClient | undefined
  private live: Subscription | undefined
  private cursor: number | undefined
  private authorityCursor: number | undefined
  private moveCursor(since: number): void {
    this.cursor = since
    this.opts.saveCursor(since)
  }
  private attempt = 0
  private retry: ReturnType<typeof setTimeout> | undefined
  private timers: ReturnType<typeof setInterval>[] = []
  private stopped = false

  constructor(private readonly opts: LinkOptions) {
    this.cursor = opts.cursor
    this.authorityCursor = opts.authorityCursor
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
    clearTimeout(this.retry)
    this.teardown()
    this.set('stopped')
  }

  /**
   * The browser lost its network: the socket is dead even if it has not noticed. Drop it and
   * wait (nothing is dialled while offline); `nudge` reconnects and catches up from the cursor.
   */
  pause(): void {
    if (this.stopped || this.state === 'revoked') return
    clearTimeout(this.retry)
    this.teardown()
    this.set('waiting', 'this browser is offline')
  }

  /** Reconnects at once (the browser says it is online again). */
  nudge(): void {
    if (this.state !== 'waiting') return
    clearTimeout(this.retry)
    this.attempt = 0
    this.connect()
  }

  publish(event: NostrEvent): Promise<OkAnswer> {
    if (!this.authenticated || this.client === undefined)
      return Promise.reject(new Error(`not connected to ${this.url}`))
    return this.client.publish(event)
  }

  private set(state: LinkState, error?: string): void {
    this.state = state
    if (error !== undefined) this.lastError = error
    this.opts.onState(this)
  }

  private teardown(): void {
    for (const t of this.timers) clearInterval(t)
    this.timers = []
    this.live = undefined
    const c = this.client
    this.client = undefined
    c?.close()
  }

  private connect(): void {
    if (this.stopped) return
    if (offline.value) {
      // Nothing to dial without a network; the browser's `online` event brings it back (nudge).
      this.set('waiting', 'this browser is offline')
      return
    }
    this.set('connecting')
    let socket: WebSocket
    try {
      socket = new WebSocket(withConnectTicket(this.url, this.opts.secret))
    } catch (err) {
      // A URL the browser refuses (or a CSP that does not allow it): wait and try again.
      this.failed(err instanceof Error ? err.message : String(err))
      return
    }
    let mine: RelayClient | undefined
    RelayClient.connect(socket, {
      url: this.url,
      timeoutMs: requestTimeoutMs,
      onNotice: (m) => this.opts.log(`${this.url} says: ${m}`),
      // Only the connection in use: one torn down on purpose closes without a retry.
      onClose: (err) => {
        if (mine !== undefined && this.client === mine) this.failed(err.message)
      },
    })
      .then((client) => {
        mine = client
        this.client = client
        return this.run(client)
      })
      .catch((err: unknown) => this.failed(err instanceof Error ? err.message : String(err)))
  }

  private failed(message: string): void {
    if (this.stopped || this.state === 'revoked') return
    this.teardown()
    this.lastError = message
    this.set('waiting', message)
    const delay = reconnectDelayMs(this.attempt)
    this.attempt = Math.min(this.attempt + 1, 10)
    this.retry = setTimeout(() => this.connect(), delay)
  }

  private revoked(message: string): void {
    this.stopped = true
    clearTimeout(this.retry)
    this.teardown()
    this.set('revoked', message)
    this.opts.onRevoked(message)
  }

  private async run(client: RelayClient): Promise<void> {
    const startedAt = Math.floor(Date.now() / 1000)
    this.set('authenticating')
    const result = await authenticate(client, {
      url: this.url,
      secret: this.opts.secret,
      chain: this.opts.chain(),
      onChainRefused: (_e, r) =>
        this.opts.log(`${this.url} refused a grant on this device's chain: ${r.message}`),
      beforeAuth: () => performance.mark('kith-phase-challenge'),
    })
    performance.mark('kith-phase-authed')
    if (result.code === 'no-challenge') throw new Error(`${this.url} sent no AUTH challenge`)
    if (result.code === 'revoked') {
      this.revoked(result.message)
      return
    }
    if (result.code === 'refused') throw new Error(`AUTH refused: ${result.message}`)
    this.set('catching-up')
    await this.subscribeLive(client)
    const deliver = (events: NostrEvent[]) => {
      this.opts.deliver(events, this.url)
      return Promise.resolve()
    }
    const log = this.opts.log
    performance.mark('kith-phase-live-sub')
    const vital = authorityFilter(this.opts.fullKinds, this.authorityCursor, startedAt)
    await pageBackwards(client, vital, startedAt, { deliver, log })
    this.authorityCursor = startedAt
    this.opts.saveAuthorityCursor(startedAt)
    performance.mark('kith-phase-full')
    const since = catchUpSince(this.cursor, startedAt)
    await pageBackwards(client, { kinds: this.opts.kinds, since }, startedAt, { deliver, log })
    performance.mark('kith-phase-caught')
    this.moveCursor(startedAt)
    this.attempt = 0
    this.lastError = undefined
    this.set('live')
    this.opts.onLive(this)
    this.timers.push(
      setInterval(() => {
        client
          .query([{ kinds: [Kind.Presence], limit: 0 }], { timeoutMs: requestTimeoutMs })
          .catch((err: unknown) => {
            // No answer: the connection is dead though not closed. Drop it and reconnect.
            if (this.client === client) this.failed(`no answer from the hub (${String(err)})`)
          })
      }, heartbeatMs),
      setInterval(() => this.moveCursor(Math.floor(Date.now() / 1000)), cursorMoveMs),
    )
  }

  private subscribeLive(client: RelayClient): Promise<void> {
    return new Promise((resolve, reject) => {
      this.live = client.subscribe(
        [
          { kinds: [...this.opts.kinds, ...this.opts.fullKinds], limit: 0 },
          { kinds: [Kind.ObserverFrame], '#p': [this.opts.pubkey], limit: 0 },
          // Who is online (ephemeral: only live): the Fleet page shows it.
          { kinds: [Kind.Presence], limit: 0 },
        ],
        {
          onEvent: (e) => this.opts.deliver([e], this.url),
          onEose: () => resolve(),
          onClosed: (err: KithError, said?: string) => {
            reject(err)
            if (err.reason !== 'refused') return
            // The hub ends subscriptions with `restricted: revoked: …` when this key is revoked.
            if (saysRevoked(said)) this.revoked(err.message)
            else if (this.client === client) this.failed(err.message)
          },
        },
        'live',
      )
    })
  }
}
