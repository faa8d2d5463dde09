import WebSocket from 'ws'
import { KithError } from '../errors.js'
import type { NostrEvent } from '../events/event.js'
import { withConnectTicket } from '../events/connect-ticket.js'
import { authenticate } from './authenticate.js'
import {
  defaultRelayTimeoutMs,
  RelayClient,
  type OkAnswer,
  type Subscription,
} from './relay-client.js'
import { fetchIds, reconcile, type EventKey } from './reconcile.js'
import {
  authorityFilter,
  catchUpSince,
  pageBackwards,
  pageTimeoutMs,
  reconnectDelayMs,
} from './catch-up.js'

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
  /**
   * The authority kinds (grants, revocations, profiles, envelopes): fetched whole the first time,
   * then only what is new since `authorityCursor` (catch-up.ts, `authorityFilter`).
   */
  fullKinds: number[]
  /** The start of the last connect whose authority fetch completed (kept across restarts). */
  authorityCursor?: () => number | undefined
  saveAuthorityCursor?: (since: number) => void
  /** More live-only filters (e.g. observer frames addressed to this device). */
  extraLive?: Record<string, unknown>[]
  cursor: () => number | undefined
  saveCursor: (since: number) => void
  /** Receives events from the hub; catch-up waits for each page to be processed. */
  deliver: (events: NostrEvent[]) => Promise<void>
  onLive?: () => void
  /** After each catch-up with this hub (lastSync is set): what it held has been taken in. */
  onCaughtUp?: () => void
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
  /**
   * This node's stored events matching a filter, as (created_at, id): with it, a hub that
   * speaks NIP-77 is caught up by reconciliation instead of paging (nothing late is missed).
   */
  localKeys?: (filter: { kinds: number[]; since: number }) => Iterable<EventKey>
}

/**
 * Reconciliation covers this far back from the cursor: an event that reaches a hub up to a week
 * after its created_at, while this node was away, is still caught up (paging only looks back an
 * hour).
 */
const reconcileWindowSeconds = 7 * 86400

/** A hub's NIP-11 document is asked for this long before the link pages instead. */
const nip11TimeoutMs = 3_000

/** Does the relay at `url` list NIP-77 in its NIP-11 document? */
async function speaksNip77(url: string): Promise<boolean> {
  try {
    const res = await fetch(url.replace(/^ws/, 'http'), {
      headers: { Accept: 'application/nostr+json' },
      signal: AbortSignal.timeout(nip11TimeoutMs),
    })
    if (!res.ok) return false
    const info = (await res.json()) as { supported_nips?: unknown }
    return Array.isArray(info.supported_nips) && info.supported_nips.includes(77)
  } catch {
    // No NIP-11 document, not JSON, or no answer in time: such a relay is paged, as before.
    return false
  }
}

/** How long a request may wait for its answer: the one default (relay-client.ts). */
const requestTimeoutMs = defaultRelayTimeoutMs
/** Pings while connected: a hub that misses one is dropped and reconnected. */
const pingIntervalMs = 15_000
/** The cursor moves along this often while live. */
const cursorSaveMs = 30_000
/** A catch-up that takes longer than this prints how far it has got, this often. */
const progressEveryMs = 2_000
/** Largest frame taken from a hub: a page of events. */
const maxFrameBytes = 16 * 1024 * 1024

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
  /** How the last catch-up went (method, rounds, events, time, rate), for kith status. */
  lastSync: string | undefined
  private lastRounds = 0
  connectedAt: number | undefined
  private ws: WebSocket | undefined
  private client: RelayClient | undefined
  private live: Subscription | undefined
  private attempt = 0
  private retryTimer: NodeJS.Timeout | undefined
  private pingTimer: NodeJS.Timeout | undefined
  private cursorTimer: NodeJS.Timeout | undefined
  private liveBatch: NostrEvent[] = []
  private liveFlush: NodeJS.Immediate | undefined
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
    this.teardown()
  }

  /** Sends an event and resolves with the hub's OK. Rejects when the link is not authenticated. */
  publish(event: NostrEvent): Promise<OkAnswer> {
    if (!this.authenticated || this.client === undefined) {
      return Promise.reject(new KithError('io', `not connected to ${this.url}`))
    }
    return this.client.publish(event)
  }

  private setState(state: LinkState): void {
    this.state = state
  }

  private connect(): void {
    if (this.stopped) return
    this.setState('connecting')
    const ws = new WebSocket(
      this.opts.auth === false
        ? this.opts.url
        : withConnectTicket(this.opts.url, this.opts.deviceSecret),
      {
        handshakeTimeout: requestTimeoutMs,
        maxPayload: maxFrameBytes,
      },
    )
    this.ws = ws
    ws.on('pong', () => {
      if (this.pingSentAt !== undefined) this.rttMs = Date.now() - this.pingSentAt
      this.pingSentAt = undefined
    })
    ws.on('error', (err) => {
      this.lastError = err.message
    })
    ws.once('close', () => {
      if (this.ws === ws) this.ws = undefined
      this.teardown()
      this.scheduleReconnect()
    })
    RelayClient.connect(ws, {
      url: this.opts.url,
      timeoutMs: requestTimeoutMs,
      onNotice: (m) => this.opts.log(`${this.url} says: ${m}`),
    })
      .then((client) => {
        this.client = client
        return this.run(ws, client)
      })
      .catch((err: unknown) => {
        this.lastError = err instanceof Error ? err.message : String(err)
        this.opts.log(`${this.url}: ${this.lastError}`)
        ws.terminate()
      })
  }

  private pingSentAt: number | undefined

  private teardown(): void {
    clearInterval(this.pingTimer)
    clearInterval(this.cursorTimer)
    // The relay client rejects whatever was pending on this connection.
    this.client?.close()
    this.client = undefined
    this.live = undefined
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
    const delay = reconnectDelayMs(this.attempt)
    this.attempt = Math.min(this.attempt + 1, 10)
    this.retryTimer = setTimeout(() => this.connect(), delay)
  }

  private async run(ws: WebSocket, client: RelayClient): Promise<void> {
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
    }, pingIntervalMs)
    if (this.opts.auth !== false) {
      this.setState('authenticating')
      const result = await authenticate(client, {
        url: this.url,
        secret: this.opts.deviceSecret,
        chain: this.opts.chain(),
        onChainRefused: (_e, r) =>
          this.opts.log(`${this.url} refused a grant on this device's chain: ${r.message}`),
      })
      if (result.code === 'no-challenge') {
        // A plain NIP-01 relay (no NIP-42): follow it unauthenticated; every event from it is
        // still verified and authorized by this node before it is stored.
        this.opts.log(`${this.url} sent no AUTH challenge: using it as an open relay`)
      } else if (result.code !== 'ok') {
        if (result.code === 'revoked') this.revoked(result.message)
        throw new KithError('restricted', `AUTH refused: ${result.message}`)
      }
    }
    this.connectedAt = startedAt
    this.setState('catching-up')
    await this.subscribeLive(ws, client)
    this.opts.onLive?.()
    await this.fetchAuthority(client, startedAt)
    this.opts.saveAuthorityCursor?.(startedAt)
    const cursor = this.opts.cursor()
    const since = catchUpSince(cursor, startedAt, {
      ...(this.opts.overlapSeconds === undefined
        ? {}
        : { overlapSeconds: this.opts.overlapSeconds }),
      ...(this.opts.firstSyncSeconds === undefined
        ? {}
        : { firstSyncSeconds: this.opts.firstSyncSeconds }),
    })
    const t0 = Date.now()
    const reconciled =
      cursor !== undefined && this.opts.localKeys !== undefined
        ? await this.reconcile(client, {
            kinds: this.opts.kinds,
            since: Math.max(0, cursor - reconcileWindowSeconds),
          })
        : undefined
    const caught =
      reconciled ?? (await this.page(client, { kinds: this.opts.kinds, since }, startedAt))
    this.opts.saveCursor(startedAt)
    const seconds = (Date.now() - t0) / 1000
    this.lastSync =
      `${reconciled === undefined ? 'paged' : `reconciled in ${this.lastRounds} rounds`}: ` +
      `${caught} events in ${seconds.toFixed(1)} s` +
      (caught > 0 && seconds > 0 ? ` (${Math.round(caught / seconds)}/s)` : '')
    this.opts.log(`caught up with ${this.url}: ${this.lastSync}`)
    this.opts.onCaughtUp?.()
    this.setState('live')
    this.attempt = 0
    this.lastError = undefined
    // While live, everything arriving is seen; move the cursor along.
    this.cursorTimer = setInterval(() => this.opts.saveCursor(this.now()), cursorSaveMs)
  }

  /**
   * The live subscription (limit 0: every new event whatever its created_at); resolves at its
   * EOSE. If the hub ends it, the connection is dropped and re-established.
   */
  private subscribeLive(ws: WebSocket, client: RelayClient): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new KithError('io', `${this.url} did not start the live subscription`)),
        requestTimeoutMs,
      )
      this.live = client.subscribe(
        [
          { kinds: [...this.opts.kinds, ...this.opts.fullKinds], limit: 0 },
          ...(this.opts.extraLive ?? []),
        ],
        {
          onEvent: (e) => this.queueLive(e),
          onEose: () => {
            clearTimeout(timer)
            resolve()
          },
          onClosed: (err) => {
            clearTimeout(timer)
            reject(err)
            if (err.reason === 'refused') {
              this.lastError = err.message
              ws.terminate()
            }
          },
        },
        'live',
      )
    })
  }

  /**
   * NIP-77 catch-up from `since`: the ids the hub holds and this node lacks, however late they
   * reached it, then those events by id. Undefined (page instead) when the hub does not speak
   * NIP-77 or refuses this reconciliation (too large a set).
   */
  private async reconcile(
    client: RelayClient,
    filter: { kinds: number[]; since: number },
  ): Promise<number | undefined> {
    if (!(await speaksNip77(this.url))) return undefined
    let result
    try {
      result = await reconcile(client, filter, this.opts.localKeys!(filter), pageTimeoutMs)
    } catch (err) {
      if (err instanceof KithError && (err.reason === 'refused' || err.reason === 'too-large')) {
        this.opts.log(`${this.url} refused reconciliation (${err.message}); paging instead`)
        return undefined
      }
      throw err
    }
    this.lastRounds = result.rounds
    const total = result.need.length
    if (total > 0) {
      this.opts.log(
        `reconciled with ${this.url} in ${result.rounds} rounds: ${total} events to fetch`,
      )
    }
    // A long catch-up says how far it has got, every few seconds.
    const t0 = Date.now()
    let fetched = 0
    let reported = t0
    return fetchIds(
      client,
      result.need,
      async (events) => {
        await this.opts.deliver(events)
        fetched += events.length
        const at = Date.now()
        if (at - reported >= progressEveryMs && fetched < total) {
          reported = at
          this.opts.log(
            `catching up with ${this.url}: ${fetched} of ${total} events ` +
              `(${Math.round((fetched * 1000) / (at - t0))}/s)`,
          )
        }
      },
      pageTimeoutMs,
    )
  }

  /**
   * The authority kinds: whole on the first connect; after, only what this node lacks of the
   * last week before its authority cursor (NIP-77, however late it reached the hub), or where the
   * hub does not reconcile, what is newer than the cursor less the overlap, in pages.
   */
  private async fetchAuthority(client: RelayClient, startedAt: number): Promise<number> {
    const cursor = this.opts.authorityCursor?.()
    const kinds = this.opts.fullKinds
    if (cursor !== undefined && this.opts.localKeys !== undefined) {
      const since = Math.max(0, cursor - reconcileWindowSeconds)
      const reconciled = await this.reconcile(client, { kinds, since })
      if (reconciled !== undefined) return reconciled
    }
    const filter = authorityFilter(kinds, cursor, startedAt, {
      ...(this.opts.overlapSeconds === undefined
        ? {}
        : { overlapSeconds: this.opts.overlapSeconds }),
    })
    return this.page(client, filter, startedAt)
  }

  /** Pages backwards from `until` through everything matching `filter` (catch-up.ts). */
  private page(
    client: RelayClient,
    filter: Record<string, unknown>,
    until: number,
  ): Promise<number> {
    return pageBackwards(client, filter, until, {
      deliver: this.opts.deliver,
      log: this.opts.log,
      timeoutMs: pageTimeoutMs,
      ...(this.opts.pageSize === undefined ? {} : { pageSize: this.opts.pageSize }),
    })
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
