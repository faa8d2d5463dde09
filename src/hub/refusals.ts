import { KithError, toNostrMessage, type KithErrorCode } from '../errors.js'
import type { NostrEvent } from '../events/event.js'
import { parseFilter, type Filter } from '../events/filter.js'
import { Kind } from '../events/kinds.js'
import { checkAuthEvent } from '../events/nip42.js'
import type { GrantVerifier } from '../grants/verifier.js'
import type { VerifyResult } from '../verify/result.js'
import type { EventLimits, Reservation } from './event-limits.js'
import { filterLimitsOf, type HubLimits } from './limits.js'

/**
 * The hub's refusals: every refusal a client can get for what it sends, as named lists of plain
 * checks (khatru's `RejectEvent` lists are the model). A check returns its refusal, the exact
 * text the client sees after `OK false`, `CLOSED`, `NEG-ERR` or `NOTICE` (a NIP-01 prefix, then
 * why), or nothing when the input passes. A list runs in order and the first refusal is the
 * answer; a check may take something (a rate token, a room, parsed filters) only once every check
 * before it has passed, so a refused input costs what it got to and no more.
 *
 * The order, verb by verb (nips/kith-hub.md states the same for clients; `test/hub/refusals.test.ts`
 * holds each list to it):
 *
 * - Before any frame: `upgrade-gate.ts` (a member's connect ticket, or a token of the address's
 *   connection rate; else HTTP 429), then `admission.ts` (strangers' deadline and caps).
 * - Every frame: `rejectFrame`, then JSON and the verb (connection.ts).
 * - EVENT: its shape (`events/event.ts` parseEvent); a pairing event (24140) leaves for
 *   `rejectPairingEvent`; `rejectEventBeforeSignature` (its last check asks the rate buckets, taking
 *   nothing); the signature (`signatureRefusal`, in the
 *   verify pool); then `FleetState.admit` (grants/fleet-state.ts: grants, channels, who may post,
 *   no plaintext in a sealed fleet), which runs `rejectEventBeforeStore` after its read-only
 *   checks and before anything changes; then the store (group-commit.ts).
 * - Pairing event: its shape, then `rejectPairingEvent`, then the signature.
 * - AUTH: `rejectAuthFrame`; the event's shape; `rejectAuth`; the signature;
 *   `rejectAuthAfterSignature` (membership may have ended meanwhile, and the person's cap).
 * - REQ: `rejectSubscriptionId` (a NOTICE: there is no id to close); a pairing-lane REQ leaves for
 *   `rejectLaneSubscription`; `rejectReq`.
 * - NEG-OPEN: `rejectSubscriptionId`, `rejectNegOpen`, then negentropy.ts's own caps
 *   (reconciliations open per connection and per person, the set's size). NEG-MSG:
 *   `rejectNegMessage`.
 * - An accepted event, to each live subscription it matches: `preventDelivery` (skipped in
 *   silence; a REQ's stored part hides the same private channels in its query).
 */

/** A refusal as the client sees it: `<prefix>: <why>`. */
export type Refusal = string

/** One check of a list: its refusal, or undefined when the input passes. */
export type Check<T> = (input: T) => Refusal | undefined

/** Runs `checks` in order; the first refusal, or undefined when every check passed. */
export function firstRefusal<T>(checks: readonly Check<T>[], input: T): Refusal | undefined {
  for (const check of checks) {
    const refusal = check(input)
    if (refusal !== undefined) return refusal
  }
  return undefined
}

/** A refusal as the KithError FleetState's `beforeChange` throws (toNostrMessage gives it back). */
export function refusalError(refusal: Refusal): KithError {
  const at = refusal.indexOf(': ')
  return new KithError(refusal.slice(0, at) as KithErrorCode, refusal.slice(at + 2))
}

const authRequired = 'auth-required: authenticate (NIP-42) as a fleet member first'

/** What a failed signature check is answered. */
export function signatureRefusal(result: Exclude<VerifyResult, 'ok'>): Refusal {
  return result === 'bad-id'
    ? 'invalid: event id does not match its content'
    : 'invalid: bad signature'
}

// Checks more than one list shares.

/** Members only: the connection has authenticated (NIP-42) as a key that is a member now. */
export function notAMember(c: { member: boolean }): Refusal | undefined {
  return c.member ? undefined : authRequired
}

/**
 * Room in this connection's queue of signature checks: a client that does not wait for its OKs
 * is refused, not buffered.
 */
export function verifyQueueFull(c: {
  verifying: number
  limits: Pick<HubLimits, 'maxPendingVerifications'>
}): Refusal | undefined {
  const max = c.limits.maxPendingVerifications
  return c.verifying >= max
    ? `rate-limited: more than ${max} events awaiting verification on this connection; wait for OKs`
    : undefined
}

/** Parses one untrusted filter with the hub's filter limits (limits.ts). */
function parseWithLimits(raw: unknown, limits: FilterInputLimits): Filter | Refusal {
  try {
    return parseFilter(raw, filterLimitsOf(limits))
  } catch (err) {
    return toNostrMessage(err)
  }
}

type FilterInputLimits = Pick<
  HubLimits,
  'maxFilterValues' | 'maxFilterTagConditions' | 'maxFilterTagValueLength'
>

// Every frame.

export interface FrameInput {
  bytes: number
  limits: Pick<HubLimits, 'maxFrameBytes'>
}

/** A frame above max_message_length (larger ones than hard_frame_bytes never reach here). */
export function frameTooLarge(f: FrameInput): Refusal | undefined {
  const max = f.limits.maxFrameBytes
  return f.bytes > max ? `invalid: frame too large (${f.bytes} bytes, max ${max})` : undefined
}

export const rejectFrame: readonly Check<FrameInput>[] = [frameTooLarge]

// EVENT.

export interface EventArrival {
  event: NostrEvent
  member: boolean
  /** May the author publish this grant or revocation now (kith-grants)? Asked of strangers only. */
  authorityLane: () => boolean
  verifying: number
  limits: Pick<HubLimits, 'maxPendingVerifications'>
  /** The refusal the rate buckets would give the event now, taking nothing (EventLimits.wouldRefuse). */
  rateRefusal: () => Refusal | undefined
}

export function authSentAsEvent(c: EventArrival): Refusal | undefined {
  return c.event.kind === Kind.ClientAuth
    ? 'invalid: AUTH events are sent with AUTH, not EVENT'
    : undefined
}

/**
 * Members only, but for grants and revocations: they carry their own authority, so a device may
 * publish its chain before it can authenticate. Only issuers authorized right now may use this
 * lane, which keeps strangers from spending the hub's signature checks.
 */
export function strangerOutsideAuthorityLane(c: EventArrival): Refusal | undefined {
  if (c.member) return undefined
  const authority = c.event.kind === Kind.Grant || c.event.kind === Kind.Revocation
  return authority && c.authorityLane() ? undefined : authRequired
}

/**
 * A person already past their rate (or the hub past its own) is refused before the hub parses
 * and verifies the event only to refuse it after (`overRateOrQuota` still takes the tokens).
 */
export function overRateBeforeSignature(c: EventArrival): Refusal | undefined {
  return c.rateRefusal()
}

/** EVENT, before its signature is checked: cheap checks, so strangers cost the hub little. */
export const rejectEventBeforeSignature: readonly Check<EventArrival>[] = [
  authSentAsEvent,
  strangerOutsideAuthorityLane,
  verifyQueueFull,
  overRateBeforeSignature,
]

export interface EventBeforeStore {
  event: NostrEvent
  /** Its canonical JSON, as stored and counted against the quota. */
  raw: string
  /** Unix seconds, and milliseconds for the rate buckets. */
  now: number
  nowMs: number
  limits: Pick<HubLimits, 'maxFutureSeconds' | 'maxContentBytes' | 'maxTags' | 'maxTagItemLength'>
  eventLimits: Pick<EventLimits, 'take'>
  /** Set by `overRateOrQuota`: the place the event holds in its person's quota until stored. */
  reservation?: Reservation | undefined
}

/** Old events are fine (outboxes deliver late); events from the future are not. */
export function createdAtTooFar(c: EventBeforeStore): Refusal | undefined {
  const max = c.limits.maxFutureSeconds
  return c.event.created_at > c.now + max
    ? `invalid: created_at is more than ${max} s in the future; check the clock`
    : undefined
}

export function contentTooLarge(c: EventBeforeStore): Refusal | undefined {
  const max = c.limits.maxContentBytes
  return Buffer.byteLength(c.event.content, 'utf8') > max
    ? `invalid: content is larger than ${max} bytes`
    : undefined
}

export function tooManyTags(c: EventBeforeStore): Refusal | undefined {
  const max = c.limits.maxTags
  return c.event.tags.length > max ? `invalid: more than ${max} tags` : undefined
}

export function tagItemTooLong(c: EventBeforeStore): Refusal | undefined {
  const max = c.limits.maxTagItemLength
  for (const tag of c.event.tags) {
    for (const item of tag) {
      if (item.length > max) return `invalid: a tag item is longer than ${max}`
    }
  }
  return undefined
}

/**
 * The rate buckets and the storage quota (event-limits.ts says which apply to which kind): last,
 * since passing takes a token and reserves the event's bytes.
 */
export function overRateOrQuota(c: EventBeforeStore): Refusal | undefined {
  try {
    c.reservation = c.eventLimits.take(c.event, c.raw, c.now, c.nowMs)
    return undefined
  } catch (err) {
    if (err instanceof KithError) return toNostrMessage(err)
    throw err
  }
}

/**
 * EVENT, signature checked: run by FleetState admission after its own read-only checks (grants,
 * channels) and before anything changes.
 */
export const rejectEventBeforeStore: readonly Check<EventBeforeStore>[] = [
  createdAtTooFar,
  contentTooLarge,
  tooManyTags,
  tagItemTooLong,
  overRateOrQuota,
]

// The pairing lane (kind 24140, kith-pair): with or without AUTH, never stored.

export interface PairingArrival {
  /** The pairing id of its one `d` tag (pairing-lane.ts pairingIdOf), if it has one. */
  pid: string | undefined
  frameBytes: number
  /** The lane's frame limit (pairing-lane.ts). */
  maxFrameBytes: number
  /** Counts an event against the connection's share; false once it is spent. */
  takeEvent: () => boolean
  /** Joins the pairing's room: the lane's refusal, or undefined once in. */
  join: (pid: string) => Refusal | undefined
  verifying: number
  limits: Pick<HubLimits, 'maxPendingVerifications'>
}

export function noPairingId(c: PairingArrival): Refusal | undefined {
  return c.pid === undefined
    ? 'invalid: a pairing event carries one d tag with the 32-hex pairing id'
    : undefined
}

export function pairingFrameTooLarge(c: PairingArrival): Refusal | undefined {
  return c.frameBytes > c.maxFrameBytes
    ? `invalid: pairing frames are at most ${c.maxFrameBytes} bytes`
    : undefined
}

export function pairingEventsSpent(c: PairingArrival): Refusal | undefined {
  return c.takeEvent() ? undefined : 'rate-limited: pairing: too many events on this connection'
}

export function pairingRoomRefuses(c: PairingArrival): Refusal | undefined {
  return c.join(c.pid!)
}

export const rejectPairingEvent: readonly Check<PairingArrival>[] = [
  noPairingId,
  pairingFrameTooLarge,
  pairingEventsSpent,
  pairingRoomRefuses,
  verifyQueueFull,
]

export interface LaneSubscription {
  /** The pairing id of the REQ's `#d`, if it is one. */
  pid: string | undefined
  join: (pid: string) => Refusal | undefined
  /** Records the connection's one lane subscription in the room it joined. */
  subscribe: (pid: string) => Refusal | undefined
}

export function badPairingId(c: LaneSubscription): Refusal | undefined {
  return c.pid === undefined ? 'invalid: a pairing id is 32 hex characters' : undefined
}

export function laneRoomRefuses(c: LaneSubscription): Refusal | undefined {
  return c.join(c.pid!)
}

export function laneSubscriptionRefused(c: LaneSubscription): Refusal | undefined {
  return c.subscribe(c.pid!)
}

/** A REQ that is exactly {kinds:[24140], "#d":[pid]}: answered CLOSED with the refusal. */
export const rejectLaneSubscription: readonly Check<LaneSubscription>[] = [
  badPairingId,
  laneRoomRefuses,
  laneSubscriptionRefused,
]

// AUTH (NIP-42). What is cheap comes first, so a stranger cannot make the hub check signatures.

export interface AuthFrame {
  /** AUTH frames this connection has sent, this one included. */
  attempts: number
  limits: Pick<HubLimits, 'maxAuthAttempts'>
}

/** Refused, and the connection closed (1008): a stranger may not guess at AUTH for ever. */
export function tooManyAuthAttempts(c: AuthFrame): Refusal | undefined {
  const max = c.limits.maxAuthAttempts
  return c.attempts > max
    ? `rate-limited: more than ${max} AUTH attempts on this connection`
    : undefined
}

export const rejectAuthFrame: readonly Check<AuthFrame>[] = [tooManyAuthAttempts]

export interface AuthArrival {
  event: NostrEvent
  challenge: string
  relayUrls: ReadonlySet<string>
  now: number
  grants: Pick<GrantVerifier, 'isMember'>
  verifying: number
  /**
   * Connections the key's person holds now, or undefined when this connection already counts
   * toward a person (its first member key did).
   */
  personHolds: () => number | undefined
  limits: Pick<HubLimits, 'maxPendingVerifications' | 'maxConnectionsPerPerson'>
}

/** events/nip42.ts checkAuthEvent: kind 22242, this connection's challenge, this hub, fresh. */
export function authEventMismatch(c: AuthArrival): Refusal | undefined {
  try {
    checkAuthEvent(c.event, { challenge: c.challenge, relayUrls: c.relayUrls, now: c.now })
    return undefined
  } catch (err) {
    return toNostrMessage(err)
  }
}

export function authKeyNotMember(c: AuthArrival): Refusal | undefined {
  const d = c.grants.isMember(c.event.pubkey, c.now)
  return d.ok ? undefined : `restricted: ${d.code}: ${d.reason}`
}

export function personAtConnectionCap(c: AuthArrival): Refusal | undefined {
  const held = c.personHolds()
  const max = c.limits.maxConnectionsPerPerson
  return held !== undefined && held >= max
    ? `rate-limited: connections: this person holds ${held} connections (max_connections_per_person ${max}); close one`
    : undefined
}

/** AUTH before its signature: only a member's key gets its signature checked. */
export const rejectAuth: readonly Check<AuthArrival>[] = [
  authEventMismatch,
  authKeyNotMember,
  verifyQueueFull,
]

/** AUTH once its signature is checked: membership may have ended meanwhile. */
export const rejectAuthAfterSignature: readonly Check<AuthArrival>[] = [
  authEventMismatch,
  authKeyNotMember,
  personAtConnectionCap,
]

// REQ, NEG-OPEN, NEG-MSG.

export interface SubscriptionIdInput {
  verb: 'REQ' | 'NEG-OPEN'
  subId: unknown
  limits: Pick<HubLimits, 'maxSubIdLength'>
}

export function badSubscriptionId(c: SubscriptionIdInput): Refusal | undefined {
  const max = c.limits.maxSubIdLength
  return typeof c.subId !== 'string' || c.subId.length === 0 || c.subId.length > max
    ? `invalid: ${c.verb} needs a subscription id of 1-${max} characters`
    : undefined
}

/** Answered NOTICE: without a valid id there is nothing to close. */
export const rejectSubscriptionId: readonly Check<SubscriptionIdInput>[] = [badSubscriptionId]

export interface ReqArrival {
  member: boolean
  rawFilters: unknown[]
  /** Set by `filtersMalformed`: the REQ's filters, parsed. */
  filters: Filter[]
  /** The connection has a subscription open under this id: the REQ replaces it (NIP-01). */
  replaces: boolean
  /** Subscriptions open on the connection now. */
  subscriptions: number
  limits: FilterInputLimits & Pick<HubLimits, 'maxFilters' | 'maxSubscriptions'>
}

export function filterCount(c: ReqArrival): Refusal | undefined {
  const max = c.limits.maxFilters
  return c.rawFilters.length === 0 || c.rawFilters.length > max
    ? `invalid: REQ takes 1-${max} filters`
    : undefined
}

/** Each filter's shape and width (events/filter.ts parseFilter with limits.ts's bounds). */
export function filtersMalformed(c: ReqArrival): Refusal | undefined {
  const filters: Filter[] = []
  for (const raw of c.rawFilters) {
    const f = parseWithLimits(raw, c.limits)
    if (typeof f === 'string') return f
    filters.push(f)
  }
  c.filters = filters
  return undefined
}

export function tooManySubscriptions(c: ReqArrival): Refusal | undefined {
  const max = c.limits.maxSubscriptions
  return !c.replaces && c.subscriptions >= max
    ? `error: too many subscriptions on this connection (max ${max})`
    : undefined
}

/** REQ: answered CLOSED with the refusal. */
export const rejectReq: readonly Check<ReqArrival>[] = [
  notAMember,
  filterCount,
  filtersMalformed,
  tooManySubscriptions,
]

export interface NegOpenArrival {
  member: boolean
  rawFilter: unknown
  message: unknown
  /** Set by `negFilterMalformed`: the filter, parsed. */
  filter?: Filter | undefined
  limits: FilterInputLimits
}

export function negMessageMissing(c: NegOpenArrival): Refusal | undefined {
  return typeof c.message === 'string'
    ? undefined
    : 'invalid: NEG-OPEN takes a filter and a hex message'
}

/** The filter is checked as a REQ's. */
export function negFilterMalformed(c: NegOpenArrival): Refusal | undefined {
  const f = parseWithLimits(c.rawFilter, c.limits)
  if (typeof f === 'string') return f
  c.filter = f
  return undefined
}

/** NIP-77 NEG-OPEN: answered NEG-ERR with the refusal. */
export const rejectNegOpen: readonly Check<NegOpenArrival>[] = [
  notAMember,
  negMessageMissing,
  negFilterMalformed,
]

/** NIP-77 NEG-MSG: answered NEG-ERR with the refusal. */
export const rejectNegMessage: readonly Check<{ member: boolean }>[] = [notAMember]

// Delivery of live events (khatru's PreventBroadcast): a refused delivery is skipped in silence;
// its refusal says why, for readers and tests.

export interface Delivery {
  event: NostrEvent
  /** An observer frame's recipients (its `p` keys); undefined for every other kind. */
  onlyTo: ReadonlySet<string> | undefined
  /** The fleet has private channels (else no channel check is needed). */
  scoped: boolean
  /** The receiving connection: the keys it proved, and what it may read (channel-gate.ts). */
  to: { readonly authed: ReadonlySet<string>; mayReceive(event: NostrEvent): boolean }
}

/** The keys an event is for when only they may receive it (observer frames); else undefined. */
export function deliveredOnlyTo(event: NostrEvent): ReadonlySet<string> | undefined {
  if (event.kind !== Kind.ObserverFrame) return undefined
  return new Set(event.tags.filter((t) => t[0] === 'p').map((t) => t[1]!))
}

/** Observer frames are for their recipient only: the connection must have proven that key. */
export function observerFrameForOthers(d: Delivery): Refusal | undefined {
  if (d.onlyTo === undefined) return undefined
  for (const key of d.to.authed) if (d.onlyTo.has(key)) return undefined
  return 'restricted: an observer frame goes to its recipient only'
}

/**
 * A private channel's events go to its members only (kith-channels). A REQ's stored part leaves
 * out the same channels inside its query (channel-gate.ts `hidden`).
 */
export function privateChannelOutsider(d: Delivery): Refusal | undefined {
  return d.scoped && !d.to.mayReceive(d.event)
    ? 'restricted: a private channel goes to its members only'
    : undefined
}

/** Each live subscription an accepted event matches (server.ts fanOut). */
export const preventDelivery: readonly Check<Delivery>[] = [
  observerFrameForOthers,
  privateChannelOutsider,
]
