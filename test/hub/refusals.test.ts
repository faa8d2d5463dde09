import { describe, expect, it } from 'vitest'
import { KithError } from '../../src/errors.js'
import type { NostrEvent } from '../../src/events/event.js'
import { signAuthEvent } from '../../src/events/nip42.js'
import type { Decision } from '../../src/grants/verifier.js'
import { defaultHubLimits } from '../../src/hub/limits.js'
import {
  firstRefusal,
  refusalError,
  rejectAuth,
  rejectAuthAfterSignature,
  rejectAuthFrame,
  rejectEventBeforeSignature,
  rejectEventBeforeStore,
  rejectFrame,
  rejectLaneSubscription,
  rejectNegMessage,
  rejectNegOpen,
  rejectPairingEvent,
  rejectReq,
  rejectSubscriptionId,
  deliveredOnlyTo,
  preventDelivery,
  type AuthArrival,
  type Delivery,
  type Check,
  type EventArrival,
  type EventBeforeStore,
  type LaneSubscription,
  type NegOpenArrival,
  type PairingArrival,
  type ReqArrival,
} from '../../src/hub/refusals.js'
import { toNostrMessage } from '../../src/errors.js'
import { newSecret } from '../helpers/secrets.js'

/**
 * The hub's refusal lists (src/hub/refusals.ts) run their checks in the order refusals.ts and
 * nips/kith-hub.md document. For each list, step k is an input that every check from k on
 * refuses: the answer must be check k's refusal, word for word as clients see it, and no check
 * after it may run (a check after it may take something: a rate token, a room).
 */
function holdsOrder<T>(
  list: readonly Check<T>[],
  names: string[],
  steps: { input: () => T; refusal: string | undefined }[],
): void {
  expect(list.map((c) => c.name)).toEqual(names)
  expect(steps).toHaveLength(list.length + 1)
  steps.forEach((step, k) => {
    // Every check from k on refuses this input on its own...
    for (let j = k; j < list.length; j++) expect(list[j]!(step.input())).toBeDefined()
    // ...and the list answers with check k's refusal, exactly.
    expect(firstRefusal(list, step.input())).toBe(step.refusal)
    if (k < list.length) expect(list[k]!(step.input())).toBe(step.refusal)
  })
}

const now = 1_800_000_000
const hex = (c: string) => c.repeat(64)
const event = (over: Partial<NostrEvent> = {}): NostrEvent => ({
  id: hex('a'),
  pubkey: hex('b'),
  created_at: now,
  kind: 9,
  tags: [],
  content: 'hello',
  sig: 'c'.repeat(128),
  ...over,
})
const limits = defaultHubLimits
const authRequired = 'auth-required: authenticate (NIP-42) as a fleet member first'
const awaiting = `rate-limited: more than ${limits.maxPendingVerifications} events awaiting verification on this connection; wait for OKs`

describe('refusal lists', () => {
  it('every frame: its size', () => {
    holdsOrder(
      rejectFrame,
      ['frameTooLarge'],
      [
        {
          input: () => ({ bytes: limits.maxFrameBytes + 1, limits }),
          refusal: `invalid: frame too large (${limits.maxFrameBytes + 1} bytes, max ${limits.maxFrameBytes})`,
        },
        { input: () => ({ bytes: limits.maxFrameBytes, limits }), refusal: undefined },
      ],
    )
  })

  it('EVENT before its signature: AUTH kind, members (or the authority lane), the verify queue', () => {
    let asked = 0
    const arrival = (over: Partial<EventArrival>): EventArrival => ({
      event: event({ kind: 22242 }),
      member: false,
      authorityLane: () => {
        asked++
        return false
      },
      verifying: limits.maxPendingVerifications,
      limits,
      rateRefusal: () => overRate,
      ...over,
    })
    const overRate = 'rate-limited: person: more than 100 events/s; slow down'
    holdsOrder(
      rejectEventBeforeSignature,
      [
        'authSentAsEvent',
        'strangerOutsideAuthorityLane',
        'verifyQueueFull',
        'overRateBeforeSignature',
      ],
      [
        {
          input: () => arrival({}),
          refusal: 'invalid: AUTH events are sent with AUTH, not EVENT',
        },
        { input: () => arrival({ event: event() }), refusal: authRequired },
        { input: () => arrival({ event: event(), member: true }), refusal: awaiting },
        {
          input: () => arrival({ event: event(), member: true, verifying: 0 }),
          refusal: overRate,
        },
        {
          input: () =>
            arrival({ event: event(), member: true, verifying: 0, rateRefusal: () => undefined }),
          refusal: undefined,
        },
      ],
    )
    // A stranger's grant passes when its issuer may publish it now; a member's never asks.
    const grant = arrival({
      event: event({ kind: 4140 }),
      verifying: 0,
      authorityLane: () => true,
      rateRefusal: () => undefined,
    })
    expect(firstRefusal(rejectEventBeforeSignature, grant)).toBeUndefined()
    asked = 0
    firstRefusal(rejectEventBeforeSignature, arrival({ event: event(), member: true }))
    expect(asked).toBe(0)
  })

  it('EVENT before it is stored: time, content, tags, tag items, then rate and quota', () => {
    const small = {
      ...limits,
      maxFutureSeconds: 10,
      maxContentBytes: 5,
      maxTags: 2,
      maxTagItemLength: 3,
    }
    let taken = 0
    const refusing = {
      take: () => {
        taken++
        throw new KithError('rate-limited', "person: more than 1 events/s from this person's keys")
      },
    }
    const input = (over: Partial<NostrEvent>, eventLimits = refusing): EventBeforeStore => ({
      event: event({
        created_at: now + 11,
        content: 'too long',
        tags: [['p', 'abcd'], ['e'], ['t']],
        ...over,
      }),
      raw: '{}',
      now,
      nowMs: now * 1000,
      limits: small,
      eventLimits,
    })
    holdsOrder(
      rejectEventBeforeStore,
      ['createdAtTooFar', 'contentTooLarge', 'tooManyTags', 'tagItemTooLong', 'overRateOrQuota'],
      [
        {
          input: () => input({}),
          refusal: 'invalid: created_at is more than 10 s in the future; check the clock',
        },
        {
          input: () => input({ created_at: now + 10 }),
          refusal: 'invalid: content is larger than 5 bytes',
        },
        {
          input: () => input({ created_at: now, content: 'hello' }),
          refusal: 'invalid: more than 2 tags',
        },
        {
          input: () => input({ created_at: now, content: 'hi', tags: [['p', 'abcd']] }),
          refusal: 'invalid: a tag item is longer than 3',
        },
        {
          input: () => input({ created_at: now, content: 'hi', tags: [['p', 'abc']] }),
          refusal: "rate-limited: person: more than 1 events/s from this person's keys",
        },
        {
          input: () =>
            input({ created_at: now, content: 'hi', tags: [['p', 'abc']] }, {
              take: () => ({ person: 'p', bytes: 2 }),
            } as unknown as typeof refusing),
          refusal: undefined,
        },
      ],
    )
    // The rate and quota take nothing for an event refused before them.
    taken = 0
    firstRefusal(rejectEventBeforeStore, input({ created_at: now, content: 'hello' }))
    expect(taken).toBe(0)
    // Passing reserves the event's place in its person's quota.
    const passing = input({ created_at: now, content: 'hi', tags: [] }, {
      take: () => ({ person: 'p', bytes: 2 }),
    } as unknown as typeof refusing)
    expect(firstRefusal(rejectEventBeforeStore, passing)).toBeUndefined()
    expect(passing.reservation).toEqual({ person: 'p', bytes: 2 })
  })

  it('the FleetState admission hands back a refusal as the same wire text', () => {
    for (const r of [
      'invalid: content is larger than 5 bytes',
      "rate-limited: quota: this person stores 3 events, their quota (quota_events_per_person 3); ask the hub's operator to raise it",
    ]) {
      expect(toNostrMessage(refusalError(r))).toBe(r)
    }
  })

  it('a pairing event: its id, frame size, the connection’s share, the room, the verify queue', () => {
    const calls: string[] = []
    const pairing = (over: Partial<PairingArrival>): PairingArrival => ({
      pid: undefined,
      frameBytes: 5000,
      maxFrameBytes: 4096,
      takeEvent: () => {
        calls.push('take')
        return false
      },
      join: () => {
        calls.push('join')
        return 'restricted: pairing: this code was already used'
      },
      verifying: limits.maxPendingVerifications,
      limits,
      ...over,
    })
    const pid = '0'.repeat(32)
    holdsOrder(
      rejectPairingEvent,
      [
        'noPairingId',
        'pairingFrameTooLarge',
        'pairingEventsSpent',
        'pairingRoomRefuses',
        'verifyQueueFull',
      ],
      [
        {
          input: () => pairing({}),
          refusal: 'invalid: a pairing event carries one d tag with the 32-hex pairing id',
        },
        {
          input: () => pairing({ pid }),
          refusal: 'invalid: pairing frames are at most 4096 bytes',
        },
        {
          input: () => pairing({ pid, frameBytes: 4096 }),
          refusal: 'rate-limited: pairing: too many events on this connection',
        },
        {
          input: () => pairing({ pid, frameBytes: 4096, takeEvent: () => true }),
          refusal: 'restricted: pairing: this code was already used',
        },
        {
          input: () =>
            pairing({ pid, frameBytes: 4096, takeEvent: () => true, join: () => undefined }),
          refusal: awaiting,
        },
        {
          input: () =>
            pairing({
              pid,
              frameBytes: 4096,
              takeEvent: () => true,
              join: () => undefined,
              verifying: 0,
            }),
          refusal: undefined,
        },
      ],
    )
    // A frame refused for its size spends none of the connection's share and joins no room.
    calls.length = 0
    firstRefusal(rejectPairingEvent, pairing({ pid }))
    expect(calls).toEqual([])
  })

  it('a pairing-lane REQ: its id, the room, one lane subscription', () => {
    const lane = (over: Partial<LaneSubscription>): LaneSubscription => ({
      pid: undefined,
      join: () => 'restricted: pairing: a third party joined; start again',
      subscribe: () => 'restricted: pairing: one lane subscription per connection',
      ...over,
    })
    const pid = '1'.repeat(32)
    holdsOrder(
      rejectLaneSubscription,
      ['badPairingId', 'laneRoomRefuses', 'laneSubscriptionRefused'],
      [
        { input: () => lane({}), refusal: 'invalid: a pairing id is 32 hex characters' },
        {
          input: () => lane({ pid }),
          refusal: 'restricted: pairing: a third party joined; start again',
        },
        {
          input: () => lane({ pid, join: () => undefined }),
          refusal: 'restricted: pairing: one lane subscription per connection',
        },
        {
          input: () => lane({ pid, join: () => undefined, subscribe: () => undefined }),
          refusal: undefined,
        },
      ],
    )
  })

  it('AUTH: attempts; then the event, the key, the verify queue; after the signature, the person’s cap', () => {
    holdsOrder(
      rejectAuthFrame,
      ['tooManyAuthAttempts'],
      [
        {
          input: () => ({ attempts: limits.maxAuthAttempts + 1, limits }),
          refusal: `rate-limited: more than ${limits.maxAuthAttempts} AUTH attempts on this connection`,
        },
        { input: () => ({ attempts: limits.maxAuthAttempts, limits }), refusal: undefined },
      ],
    )
    const sk = newSecret()
    const url = 'ws://127.0.0.1:7447'
    const challenge = 'f'.repeat(32)
    const stranger: Decision = { ok: false, code: 'not-a-member', reason: 'no grant' }
    const member: Decision = { ok: true, role: 'device', chain: [] }
    const auth = (over: Partial<AuthArrival> & { challengeSigned?: string }): AuthArrival => ({
      event: signAuthEvent(url, over.challengeSigned ?? 'e'.repeat(32), sk, now),
      challenge,
      relayUrls: new Set([url]),
      now,
      grants: { isMember: () => stranger },
      verifying: limits.maxPendingVerifications,
      personHolds: () => limits.maxConnectionsPerPerson,
      limits,
      ...over,
    })
    const good = { challengeSigned: challenge }
    const cap = `rate-limited: connections: this person holds ${limits.maxConnectionsPerPerson} connections (max_connections_per_person ${limits.maxConnectionsPerPerson}); close one`
    for (const [list, names, last] of [
      [rejectAuth, ['authEventMismatch', 'authKeyNotMember', 'verifyQueueFull'], awaiting],
      [
        rejectAuthAfterSignature,
        ['authEventMismatch', 'authKeyNotMember', 'personAtConnectionCap'],
        cap,
      ],
    ] as const) {
      holdsOrder(
        list,
        [...names],
        [
          {
            input: () => auth({}),
            refusal: 'invalid: AUTH challenge does not match this connection',
          },
          { input: () => auth(good), refusal: 'restricted: not-a-member: no grant' },
          { input: () => auth({ ...good, grants: { isMember: () => member } }), refusal: last },
          {
            input: () =>
              auth({
                ...good,
                grants: { isMember: () => member },
                verifying: 0,
                personHolds: () => undefined,
              }),
            refusal: undefined,
          },
        ],
      )
    }
  })

  it('REQ: its id (a NOTICE), then members, filter count, each filter, subscriptions', () => {
    holdsOrder(
      rejectSubscriptionId,
      ['badSubscriptionId'],
      [
        {
          input: () => ({ verb: 'REQ' as const, subId: 'x'.repeat(65), limits }),
          refusal: 'invalid: REQ needs a subscription id of 1-64 characters',
        },
        {
          input: () => ({ verb: 'REQ' as const, subId: 'x'.repeat(64), limits }),
          refusal: undefined,
        },
      ],
    )
    const tooWide = { ids: Array.from({ length: limits.maxFilterValues + 1 }, () => hex('d')) }
    const req = (over: Partial<ReqArrival>): ReqArrival => ({
      member: false,
      rawFilters: [...Array.from({ length: limits.maxFilters }, () => ({ kinds: [1] })), tooWide],
      filters: [],
      replaces: false,
      subscriptions: limits.maxSubscriptions,
      limits,
      ...over,
    })
    holdsOrder(
      rejectReq,
      ['notAMember', 'filterCount', 'filtersMalformed', 'tooManySubscriptions'],
      [
        { input: () => req({}), refusal: authRequired },
        { input: () => req({ member: true }), refusal: 'invalid: REQ takes 1-10 filters' },
        {
          input: () => req({ member: true, rawFilters: [{ kinds: [1] }, tooWide] }),
          refusal: `invalid: filter too wide: ids has ${limits.maxFilterValues + 1} values (max ${limits.maxFilterValues})`,
        },
        {
          input: () => req({ member: true, rawFilters: [{ kinds: [1] }] }),
          refusal: `error: too many subscriptions on this connection (max ${limits.maxSubscriptions})`,
        },
        {
          input: () => req({ member: true, rawFilters: [{ kinds: [1] }], replaces: true }),
          refusal: undefined,
        },
      ],
    )
    const passed = req({
      member: true,
      rawFilters: [{ kinds: [1], '#p': [hex('e')] }],
      subscriptions: 0,
    })
    expect(firstRefusal(rejectReq, passed)).toBeUndefined()
    expect(passed.filters).toEqual([{ kinds: [1], tags: { p: [hex('e')] } }])
  })

  it('NEG-OPEN and NEG-MSG: members, the message, the filter as a REQ’s', () => {
    const open = (over: Partial<NegOpenArrival>): NegOpenArrival => ({
      member: false,
      rawFilter: { '#x': ['y'.repeat(limits.maxFilterTagValueLength + 1)] },
      message: undefined,
      limits,
      ...over,
    })
    holdsOrder(
      rejectNegOpen,
      ['notAMember', 'negMessageMissing', 'negFilterMalformed'],
      [
        { input: () => open({}), refusal: authRequired },
        {
          input: () => open({ member: true }),
          refusal: 'invalid: NEG-OPEN takes a filter and a hex message',
        },
        {
          input: () => open({ member: true, message: '61' }),
          refusal: `invalid: filter #x must hold strings (max ${limits.maxFilterTagValueLength} chars)`,
        },
        {
          input: () => open({ member: true, message: '61', rawFilter: { kinds: [9] } }),
          refusal: undefined,
        },
      ],
    )
    holdsOrder(
      rejectNegMessage,
      ['notAMember'],
      [
        { input: () => ({ member: false }), refusal: authRequired },
        { input: () => ({ member: true }), refusal: undefined },
      ],
    )
  })

  it('delivery of a live event: observer frames to their recipient, private channels to members', () => {
    const recipient = hex('1')
    const frame = event({ kind: 24142, tags: [['p', recipient]] })
    const delivery = (over: Partial<Delivery>): Delivery => ({
      event: frame,
      onlyTo: deliveredOnlyTo(frame),
      scoped: true,
      to: { authed: new Set([hex('2')]), mayReceive: () => false },
      ...over,
    })
    holdsOrder(
      preventDelivery,
      ['observerFrameForOthers', 'privateChannelOutsider'],
      [
        {
          input: () => delivery({}),
          refusal: 'restricted: an observer frame goes to its recipient only',
        },
        {
          input: () => delivery({ to: { authed: new Set([recipient]), mayReceive: () => false } }),
          refusal: 'restricted: a private channel goes to its members only',
        },
        {
          input: () => delivery({ to: { authed: new Set([recipient]), mayReceive: () => true } }),
          refusal: undefined,
        },
      ],
    )
    // Other kinds go to anyone subscribed; a fleet without private channels asks no gate.
    expect(deliveredOnlyTo(event())).toBeUndefined()
    const open = delivery({ event: event(), onlyTo: undefined, scoped: false })
    expect(firstRefusal(preventDelivery, open)).toBeUndefined()
  })
})
