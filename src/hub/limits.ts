import type { FilterLimits } from '../events/filter.js'

/** The hub's explicit limits; every one is published in the NIP-11 document. */
export interface HubLimits {
  /** Largest frame answered with a NIP-01 refusal; larger frames get invalid: "frame too large". */
  maxFrameBytes: number
  /** Frames above this are not even read: the socket is closed with 1009 (ws maxPayload). */
  hardFrameBytes: number
  maxContentBytes: number
  maxTags: number
  maxTagItemLength: number
  maxSubscriptions: number
  maxFilters: number
  /** Most values one filter array may hold; more is an over-wide filter. */
  maxFilterValues: number
  /** Most tag conditions (`#e`, `#p`, …) one filter may hold; more is an over-wide filter. */
  maxFilterTagConditions: number
  /** Longest value (characters) a filter's tag condition may hold. */
  maxFilterTagValueLength: number
  defaultLimit: number
  maxLimit: number
  maxSubIdLength: number
  /**
   * Sustained events per second per person: all their keys (owner, devices, agents) share one
   * bucket, so thirty agent keys get no more than one. 0 disables every rate limit (benchmarks).
   */
  eventsPerSecond: number
  /** Burst allowance per person. */
  eventBurst: number
  /**
   * Sustained events per second for the whole hub, everyone together: many people flooding at
   * once still leave the hub time to serve reads. Grants, revocations and channel definitions are
   * not counted here (a revocation must land during a flood); they have a bucket per key.
   */
  hubEventsPerSecond: number
  /** Burst allowance of the whole hub: a fleet's nodes delivering their outboxes at once. */
  hubEventBurst: number
  /** Stored events a person may hold, all their keys together (authority kinds not counted). */
  quotaEvents: number
  /** Stored bytes (canonical JSON, UTF-8) a person may hold. */
  quotaBytes: number
  /** How far in the future created_at may be. Old events are fine: outboxes deliver late. */
  maxFutureSeconds: number
  heartbeatMs: number
  /**
   * Output a connection has not read (its socket's buffer plus live events held back while a REQ
   * streams its stored part). Past it the connection is closed: a client that stops reading must
   * not make the hub hold its traffic in memory.
   */
  maxUnreadBytes: number
  /**
   * A REQ sends its stored part in slices: at most this much per turn of the event loop, so one
   * large REQ does not keep others waiting. It pauses while the client has `reqHighWaterBytes`
   * unread and resumes as it reads.
   */
  reqSliceBytes: number
  /**
   * Main-thread time one slice of a REQ's stored part may take (`reqSliceBytes` sent or this
   * spent, whichever comes first), and what the REQ scheduler spends in one turn of the event
   * loop: what another connection's frame may wait behind other people's REQs.
   */
  reqSliceMs: number
  reqHighWaterBytes: number
  /** A REQ paused this long on a client that does not read closes the connection. */
  slowReaderMs: number
  /**
   * Main-thread milliseconds per second a person's frames, REQs (sending stored results) and
   * NIP-77 steps may take, all their connections together (a burst of `reqWorkBurstMs` at once).
   * Past it their REQs wait and their connections are not read: one member re-sending huge REQs
   * cannot stall the others. A node catching up 100,000 events needs about a second of it.
   */
  reqWorkMsPerSecond: number
  reqWorkBurstMs: number
  /**
   * A person past their work budget goes on while no one else has sent the hub a frame (a
   * stranger's included) or had work charged for this long; what they spend meanwhile is not
   * charged past what they had (req-scheduler.ts WorkBudget). A node catching up alone on a
   * quiet hub runs at the main thread's pace, not the budget's. 0 never lends.
   */
  reqWorkLendAfterQuietMs: number
  /** AUTH frames one connection may send; past it the connection is closed (1008). */
  maxAuthAttempts: number
  /**
   * Events (and AUTHs) of one connection waiting for their signature check; more are refused
   * `rate-limited:` until OKs come back. Above the 64 a busy node keeps in flight.
   */
  maxPendingVerifications: number
  /**
   * A connection must authenticate as a member within this, or it is closed (1008). One in a
   * pairing room has until the room expires.
   */
  authDeadlineMs: number
  /**
   * Connections from one address (IPv6: one /64) not yet authenticated as a member, TCP sockets
   * still before their WebSocket upgrade included; more are dropped on arrival.
   */
  maxUnauthenticatedPerAddress: number
  /**
   * Unauthenticated connections the hub holds in all: a new one beyond it closes the oldest
   * (1013). Every other file descriptor under the process limit is kept for members.
   */
  maxUnauthenticated: number
  /**
   * NIP-77 (negentropy): events one reconciliation may cover (the set is held in memory, ~100
   * bytes an event, while it runs); a larger one is refused with NEG-ERR `blocked:` and the
   * client narrows its filter (a time window) or pages.
   */
  negMaxItems: number
  /**
   * NIP-77: items of a reconciliation's set read in one store query (a page). A large set is
   * built over many turns (each charged to the person's work budget, each at most `negSliceMs`
   * long), so other connections' EVENTs and REQs are answered between them.
   */
  negSliceItems: number
  /**
   * NIP-77: main-thread time one turn of reading a set may take (pages of `negSliceItems` are
   * read until it is spent): what another connection's frame may wait behind a reconciliation.
   */
  negSliceMs: number
  /** NIP-77 reconciliations open at once on one connection. */
  negMaxOpen: number
  /** NIP-77 reconciliations open at once for one person, all their connections together. */
  negMaxOpenPerPerson: number
  /**
   * Connections one person may hold authenticated at once (all their keys); an AUTH past it is
   * refused `rate-limited: connections: …`. A hub key is its own person.
   */
  maxConnectionsPerPerson: number
  /** A reconciliation with no NEG-MSG for this long is closed (NEG-ERR `closed:`). */
  negIdleMs: number
  /**
   * New WebSocket connections per second one address (IPv6: one /64) may open; more are answered
   * HTTP 429 with Retry-After before any WebSocket is made. A connection that authenticates as
   * a member gets its token back, and one carrying a member's connect ticket is not charged.
   * 0 turns it off.
   */
  connectionsPerSecondPerAddress: number
  connectionBurstPerAddress: number
  /**
   * An over-rate upgrade is answered 429 this long after it arrives (at most its Retry-After),
   * its socket held meanwhile as one admission defers (bounded per address and in all). A flood
   * that waits for each answer before opening the next connection, as floods measured here do,
   * is slowed to one try per socket per delay, where an immediate answer let it spend the hub's
   * main thread on ~2,000 refusals a second (docs/performance.md, session 5). A member's
   * connect ticket is never over the rate. 0 answers at once.
   */
  overRateAnswerDelayMs: number
  /** Addresses the connection rate remembers (connection-rate.ts says what happens past it). */
  connectionRateAddresses: number
  /** Pairing rooms one address may have opened and not yet forgotten (pairing-lane.ts). */
  maxPairingRoomsPerAddress: number
}

export const defaultHubLimits: HubLimits = {
  maxFrameBytes: 128 * 1024,
  hardFrameBytes: 1024 * 1024,
  maxContentBytes: 64 * 1024,
  maxTags: 1000,
  maxTagItemLength: 4096,
  maxSubscriptions: 20,
  maxFilters: 10,
  maxFilterValues: 1000,
  maxFilterTagConditions: 8,
  maxFilterTagValueLength: 1024,
  defaultLimit: 500,
  maxLimit: 5000,
  maxSubIdLength: 64,
  eventsPerSecond: 100,
  eventBurst: 1000,
  hubEventsPerSecond: 2000,
  hubEventBurst: 20_000,
  quotaEvents: 1_000_000,
  quotaBytes: 512 * 1024 * 1024,
  maxFutureSeconds: 900,
  heartbeatMs: 30_000,
  maxUnreadBytes: 8 * 1024 * 1024,
  reqSliceBytes: 256 * 1024,
  reqSliceMs: 1,
  reqHighWaterBytes: 1024 * 1024,
  slowReaderMs: 30_000,
  reqWorkMsPerSecond: 200,
  reqWorkBurstMs: 1000,
  reqWorkLendAfterQuietMs: 1000,
  maxAuthAttempts: 8,
  maxPendingVerifications: 256,
  authDeadlineMs: 15_000,
  maxUnauthenticatedPerAddress: 32,
  maxUnauthenticated: 256,
  negMaxItems: 500_000,
  negSliceItems: 256,
  negSliceMs: 1,
  negMaxOpen: 2,
  negMaxOpenPerPerson: 8,
  maxConnectionsPerPerson: 64,
  negIdleMs: 60_000,
  connectionsPerSecondPerAddress: 10,
  connectionBurstPerAddress: 20,
  overRateAnswerDelayMs: 1000,
  connectionRateAddresses: 16_384,
  maxPairingRoomsPerAddress: 64,
}

/** What a REQ's or a NEG-OPEN's filters are parsed with (events/filter.ts). */
export function filterLimitsOf(
  limits: Pick<HubLimits, 'maxFilterValues' | 'maxFilterTagConditions' | 'maxFilterTagValueLength'>,
): FilterLimits {
  return {
    maxValues: limits.maxFilterValues,
    maxTagConditions: limits.maxFilterTagConditions,
    maxTagValueLength: limits.maxFilterTagValueLength,
  }
}

// Timings of the hub that are not published limits (NIP-11 lists only the ones above).

/**
 * A peer that does not answer a close frame is cut after this long, not ws's 30 s: a stranger
 * closed for its deadline must free its file descriptor quickly.
 */
export const wsCloseTimeoutMs = 2000
/** On stop, clients get this long to finish the close handshake (they see 1001, not 1006). */
export const stopCloseWaitMs = 1000
/** Admission refusals are logged in one line per this long at most: a flood must not flood the log. */
export const admissionLogEveryMs = 10_000
