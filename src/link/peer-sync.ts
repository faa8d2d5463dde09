import WebSocket from 'ws'
import { KithError } from '../errors.js'
import { publicKeyOf, type NostrEvent } from '../events/event.js'
import type { Filter } from '../events/filter.js'
import { Kind, isEphemeralKind } from '../events/kinds.js'
import type { EventStore } from '../store/event-store.js'
import { fetchIds, reconcile } from './reconcile.js'
import { authenticate } from './authenticate.js'
import { backoffMs } from './backoff.js'
import { defaultRelayTimeoutMs, RelayClient, type OkAnswer } from './relay-client.js'

/**
 * Hub-to-hub replication (kith-hub, "Peers"): a bridge between this hub and one peer relay, each
 * side a plain NIP-01 client. The bridge speaks to its own hub over a loopback WebSocket, so
 * every event from the peer goes through the hub's admission exactly as a member's would
 * (grants, channels, limits; a revocation closes the revoked key's connections at once), and it
 * reads the peer as any relay: a Kith hub (AUTH as this hub's founder-granted key) or a plain
 * NIP-77 relay such as strfry (no AUTH).
 *
 * On connect, and every `roundMs`, a reconciliation in three phases (authority, channel
 * definitions and the fleet's setting, everything) finds what either side lacks; once the first
 * round is past its first two phases, both sides are subscribed live. Each id crosses at most once per bridge, so two hubs peered both ways, or a ring, do not
 * echo; ephemeral events are not replicated (they would have no store to stop an echo).
 */
export interface PeerSyncOptions {
  peerUrl: string
  /** This hub's own URL (loopback). */
  localUrl: string
  /** The hub's key: its founder-granted `hub` role lets it read and relay everything. */
  secretKey: Uint8Array
  /** This hub's store: the keys it reconciles and the events it offers. */
  store: EventStore
  log: (line: string) => void
  roundMs?: number
  /**
   * The fleet's founder. With it, the third phase covers the fleet only: events by the founder
   * and every key a stored grant names (all a Kith hub admits). Without it, the peer's whole
   * store (a relay that holds only this fleet).
   */
  fleet?: string
  /** Ids fetched from the peer in one round at most (default maxNeedPerRound). */
  maxNeed?: number
  /** Called after every reconciliation round (tests, status). */
  onRound?: (round: PeerRound) => void
}

export interface PeerRound {
  /** Ids the peer had that this hub lacked and were fetched, and the reverse. */
  need: number
  have: number
  /** Of those, how many the receiving side refused (retried next round). */
  refused: number
  ms: number
}

export type PeerState = 'connecting' | 'syncing' | 'live' | 'waiting' | 'stopped'

export interface PeerStats {
  url: string
  state: PeerState
  rounds: number
  /** Events taken from the peer, and given to it, since start. */
  received: number
  sent: number
  lastRound?: PeerRound
  lastError?: string
}

/** A full round each minute catches whatever the live streams missed (a refusal, a gap). */
export const defaultPeerRoundMs = 60_000
/**
 * Wait this long for a peer's AUTH challenge before treating it as a relay without NIP-42: half
 * the links' wait (authenticate.ts): a peer is often a plain relay, waited for on every connect.
 */
const peerChallengeWaitMs = 1_500
/** A peer's requests carry whole rounds of a fleet's events: three times a link's wait. */
const requestTimeoutMs = 3 * defaultRelayTimeoutMs
/** Events published at once to either side while catching up. */
const publishWindow = 64
/** Ids remembered as already crossed (either way), so nothing echoes back. */
const seenCapacity = 200_000
/** Live subscriptions start a little in the past, so nothing falls between them and a round. */
const liveOverlapSeconds = 60
const maxRetryMs = 30_000
const frameBytes = 16 * 1024 * 1024

/**
 * What the rest is judged by: grants, then channel definitions and the fleet's setting (which
 * decides whether plaintext is taken, kith-e2e/1). Live relaying starts only after these.
 */
const authorityPhases: Filter[] = [
  { kinds: [Kind.Grant, Kind.Revocation] },
  { kinds: [Kind.ChannelDefinition, Kind.FleetSetting] },
]
/** Ids fetched from a peer in one round at most; the rest come in later rounds. */
export const maxNeedPerRound = 5000
/** An id this hub refused is not fetched again for this many rounds (about half an hour). */
const refusedQuietRounds = 30
const refusedCapacity = 100_000
/** Authors per reconciliation filter: under every relay's filter limits (ours: 1000). */
const authorsPerFilter = 500
/** A peer whose rounds bring only refusals is asked at most once per this many rounds. */
const maxRoundBackoff = 32

export class PeerSync {
  private state: PeerState = 'connecting'
  private rounds = 0
  private received = 0
  private sent = 0
  private lastRound: PeerRound | undefined
  private lastError: string | undefined
  private stopped = false
  private attempt = 0
  private retryTimer: ReturnType<typeof setTimeout> | undefined
  private roundTimer: ReturnType<typeof setInterval> | undefined
  private clients: RelayClient[] = []
  private readonly seen = new Set<string>()
  /** Ids the peer offered and this hub refused, with the round they were refused in. */
  private readonly refusedAt = new Map<string, number>()
  /** Rounds to skip before asking again a peer that brought nothing but refusals. */
  private backoff = 0
  private skip = 0
  private running: Promise<void> | undefined

  constructor(private readonly opts: PeerSyncOptions) {}

  start(): void {
    this.connect()
  }

  stats(): PeerStats {
    return {
      url: this.opts.peerUrl,
      state: this.state,
      rounds: this.rounds,
      received: this.received,
      sent: this.sent,
      ...(this.lastRound ? { lastRound: this.lastRound } : {}),
      ...(this.lastError ? { lastError: this.lastError } : {}),
    }
  }

  async close(): Promise<void> {
    this.stopped = true
    this.state = 'stopped'
    clearTimeout(this.retryTimer)
    clearInterval(this.roundTimer)
    for (const c of this.clients) c.close()
    await this.running?.catch(() => undefined)
  }

  private connect(): void {
    if (this.stopped) return
    this.state = 'connecting'
    this.running = this.bridgeOnce().then(
      () => this.retry(),
      (err: unknown) => {
        this.lastError = err instanceof Error ? err.message : String(err)
        if (!this.stopped) this.opts.log(`peer ${this.opts.peerUrl}: ${this.lastError}`)
        this.retry()
      },
    )
  }

  private retry(): void {
    clearInterval(this.roundTimer)
    for (const c of this.clients) c.close()
    this.clients = []
    if (this.stopped) return
    this.state = 'waiting'
    const delay = backoffMs(this.attempt, { firstMs: 500, maxMs: maxRetryMs, jitter: [1, 1] })
    this.attempt = Math.min(this.attempt + 1, 10)
    this.retryTimer = setTimeout(() => this.connect(), delay)
  }

  /** One connection to both sides, until either closes. */
  private async bridgeOnce(): Promise<void> {
    const local = await this.open(this.opts.localUrl)
    const peer = await this.open(this.opts.peerUrl)
    // The founder published this hub's grant to one side or the other: each learns it from the
    // other before AUTH (grants carry their own authority, so a Kith hub takes them unannounced).
    await this.offerOwnGrants(peer)
    await this.authenticate(peer, false)
    await this.publishAll(
      local,
      await peer.query([{ kinds: [Kind.Grant], '#p': [publicKeyOf(this.opts.secretKey)] }]),
    )
    await this.authenticate(local, true)
    const closed = new Promise<void>((resolve) => {
      this.onClosed = resolve
    })
    this.state = 'syncing'
    // Live relaying starts once the authority phases are through: an event relayed before the
    // definition of its private channel (or the setting that seals the fleet) would be judged
    // by a hub that does not know them yet.
    await this.round(local, peer, () => {
      const since = Math.floor(Date.now() / 1000) - liveOverlapSeconds
      peer.subscribe([{ since }], { onEvent: (e) => void this.cross(e, local, 'in') })
      local.subscribe([{ since }], { onEvent: (e) => void this.cross(e, peer, 'out') })
    })
    this.attempt = 0
    this.state = 'live'
    this.roundTimer = setInterval(() => {
      if (this.skip > 0) {
        this.skip--
        return
      }
      this.round(local, peer).catch((err: unknown) => {
        this.lastError = err instanceof Error ? err.message : String(err)
        this.opts.log(`peer ${this.opts.peerUrl}: round failed: ${this.lastError}`)
      })
    }, this.opts.roundMs ?? defaultPeerRoundMs)
    await closed
  }

  private onClosed: (() => void) | undefined

  private open(url: string): Promise<RelayClient> {
    const ws = new WebSocket(url, { handshakeTimeout: requestTimeoutMs, maxPayload: frameBytes })
    ws.on('error', (err) => {
      this.lastError = `${url}: ${err.message}`
    })
    return RelayClient.connect(ws, {
      url,
      timeoutMs: requestTimeoutMs,
      onNotice: (m) => this.opts.log(`peer ${url} says: ${m}`),
      onClose: () => this.onClosed?.(),
    }).then((client) => {
      this.clients.push(client)
      if (this.stopped) client.close()
      return client
    })
  }

  private async authenticate(client: RelayClient, required: boolean): Promise<void> {
    // This hub's own grant is offered to the peer before (offerOwnGrants), not as a chain here.
    const result = await authenticate(client, {
      secret: this.opts.secretKey,
      challengeWaitMs: required ? requestTimeoutMs : peerChallengeWaitMs,
    })
    if (result.code === 'no-challenge') {
      if (required) throw new KithError('io', `${client.url} sent no AUTH challenge`)
      return
    }
    if (result.code !== 'ok') {
      throw new KithError(
        'restricted',
        `${client.url} refused this hub's key (${result.message}); the founder grants it with ` +
          '`kith hub grant`',
        { reason: 'refused' },
      )
    }
  }

  private async offerOwnGrants(peer: RelayClient): Promise<void> {
    const pubkey = publicKeyOf(this.opts.secretKey)
    const grants = this.opts.store
      .query([{ kinds: [Kind.Grant], tags: { p: [pubkey] } }], { defaultLimit: 100, maxLimit: 100 })
      .map((row) => this.opts.store.getEvent(row.id))
      .filter((e): e is NostrEvent => e !== undefined)
      .sort((a, b) => a.created_at - b.created_at)
    await this.publishAll(peer, grants)
  }

  /**
   * The phases of a round: authority first, so it reaches each side before what it admits, then
   * the fleet's events (scoped when the fleet is known: a plain relay's strangers stay there).
   */
  private phases(): Filter[] {
    const fleet = this.opts.fleet
    if (fleet === undefined) return [...authorityPhases, {}]
    const authors = new Set([fleet])
    for (const g of this.opts.store.eventsOfKind(Kind.Grant)) {
      for (const t of g.tags) if (t[0] === 'p' && t[1] !== undefined) authors.add(t[1])
    }
    const list = [...authors]
    const byAuthor: Filter[] = []
    for (let i = 0; i < list.length; i += authorsPerFilter) {
      byAuthor.push({ authors: list.slice(i, i + authorsPerFilter) })
    }
    return [...authorityPhases, ...byAuthor]
  }

  /** One reconciliation, phase by phase; at most maxNeed ids fetched from the peer. */
  private async round(
    local: RelayClient,
    peer: RelayClient,
    afterAuthority?: () => void,
  ): Promise<void> {
    const started = Date.now()
    let need = 0
    let have = 0
    let refused = 0
    let refusedIn = 0
    let acceptedIn = 0
    const maxNeed = this.opts.maxNeed ?? maxNeedPerRound
    const fetched = new Set<string>()
    for (const [phase, filter] of this.phases().entries()) {
      if (phase === authorityPhases.length) afterAuthority?.()
      const keys = this.opts.store.openCursor(filter, Number.MAX_SAFE_INTEGER, [], undefined)
      const diff = await reconcile(peer, { ...filter }, keys, requestTimeoutMs)
      const wanted: string[] = []
      for (const id of diff.need) {
        if (fetched.size >= maxNeed) break
        const at = this.refusedAt.get(id)
        if (fetched.has(id) || (at !== undefined && this.rounds - at < refusedQuietRounds)) continue
        fetched.add(id)
        wanted.push(id)
      }
      need += wanted.length
      have += diff.have.length
      // Refused once, tried again in this round while others are accepted: a grant whose parent
      // came later (the same second, the next batch, or in flight beside it) is refused only
      // until the parent is stored. Without this a new hub lacked such grants for
      // `refusedQuietRounds` rounds (half an hour), and their keys could not connect to it.
      let again: NostrEvent[] = []
      const publishIn = async (events: NostrEvent[]) => {
        const r = await this.publishAll(local, events, (e) => again.push(e))
        this.received += r.accepted
        acceptedIn += r.accepted
        return r.accepted
      }
      await fetchIds(
        peer,
        wanted,
        async (events) => {
          events.sort((a, b) => a.created_at - b.created_at)
          for (const e of events) this.seen.add(e.id)
          await publishIn(events)
        },
        requestTimeoutMs,
      )
      for (let progress = true; progress && again.length > 0;) {
        const retry = again
        again = []
        progress = (await publishIn(retry)) > 0
      }
      for (const e of again) this.noteRefused(e.id)
      refusedIn += again.length
      refused += again.length
      for (let i = 0; i < diff.have.length; i += 500) {
        const events = diff.have
          .slice(i, i + 500)
          .map((id) => this.opts.store.getEvent(id))
          .filter((e): e is NostrEvent => e !== undefined)
          .sort((a, b) => a.created_at - b.created_at)
        for (const e of events) this.seen.add(e.id)
        const r = await this.publishAll(peer, events)
        this.sent += r.accepted
        refused += r.refused
      }
    }
    this.trimSeen()
    this.rounds++
    // A peer that brings nothing but refusals is asked less and less often (up to 1 in 32).
    if (refusedIn > 0 && acceptedIn === 0)
      this.backoff = Math.min(maxRoundBackoff, this.backoff * 2 || 1)
    else this.backoff = 0
    this.skip = this.backoff
    this.lastRound = { need, have, refused, ms: Date.now() - started }
    if (need + have > 0) {
      this.opts.log(
        `peer ${this.opts.peerUrl}: round ${this.rounds}: ${need} in, ${have} out` +
          (refused > 0 ? `, ${refused} refused (retried next round)` : '') +
          ` in ${this.lastRound.ms} ms`,
      )
    }
    this.opts.onRound?.(this.lastRound)
  }

  /** A live event crossing the bridge: once per id, never back the way it came. */
  private async cross(event: NostrEvent, to: RelayClient, way: 'in' | 'out'): Promise<void> {
    if (isEphemeralKind(event.kind) || this.seen.has(event.id)) return
    this.seen.add(event.id)
    this.trimSeen()
    let answer: OkAnswer
    try {
      answer = await to.publish(event)
    } catch (err) {
      // The round after the reconnect finds it again.
      this.lastError = err instanceof Error ? err.message : String(err)
      return
    }
    if (answer.ok) {
      if (way === 'in') this.received++
      else this.sent++
    }
  }

  private async publishAll(
    to: RelayClient,
    events: readonly NostrEvent[],
    onRefused?: (e: NostrEvent) => void,
  ): Promise<{ accepted: number; refused: number }> {
    let accepted = 0
    let refused = 0
    let next = 0
    const worker = async () => {
      while (next < events.length) {
        const e = events[next++]!
        const answer = await to.publish(e)
        if (answer.ok) accepted++
        else {
          refused++
          onRefused?.(e)
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(publishWindow, events.length) }, worker))
    return { accepted, refused }
  }

  private noteRefused(id: string): void {
    this.refusedAt.delete(id)
    this.refusedAt.set(id, this.rounds)
    if (this.refusedAt.size > refusedCapacity) {
      this.refusedAt.delete(this.refusedAt.keys().next().value!)
    }
  }

  private trimSeen(): void {
    if (this.seen.size <= seenCapacity) return
    const drop = this.seen.size - seenCapacity
    let i = 0
    for (const id of this.seen) {
      if (i++ >= drop) break
      this.seen.delete(id)
    }
  }
}
