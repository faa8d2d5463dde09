import { describe, expect, it } from 'vitest'
import { signEvent } from '../../src/events/event.js'
import { signAuthEvent } from '../../src/events/nip42.js'
import { defaultHubLimits } from '../../src/hub/limits.js'
import {
  firstRefusal,
  rejectAuth,
  rejectEventBeforeSignature,
  rejectEventBeforeStore,
  rejectFrame,
  rejectLaneSubscription,
  rejectNegOpen,
  rejectPairingEvent,
  rejectReq,
  rejectSubscriptionId,
} from '../../src/hub/refusals.js'
import { startTestHub } from '../helpers/hub.js'
import { newSecret } from '../helpers/secrets.js'

/**
 * What a refusal of refusals.ts's lists says is what a client reads, prefix and all: each case
 * sends a real hub the frame that one check refuses, and compares the OK, CLOSED, NEG-ERR or
 * NOTICE it gets with that list's answer for the same input, and with the text nips/kith-hub.md
 * documents.
 */
const now = () => Math.floor(Date.now() / 1000)
const limits = { ...defaultHubLimits, maxContentBytes: 10 }
const authRequired = 'auth-required: authenticate (NIP-42) as a fleet member first'

describe('refusals on the wire', () => {
  it('EVENT: OK false with the refusal of rejectEventBeforeSignature and rejectEventBeforeStore', async () => {
    const t = await startTestHub({ limits: { maxContentBytes: 10 } })
    const stranger = await t.connect()
    const chat = t.sign({ content: 'hi' })
    stranger.send(['EVENT', chat])
    const refusedStranger = await stranger.ok(chat.id)
    const expected = firstRefusal(rejectEventBeforeSignature, {
      event: chat,
      member: false,
      authorityLane: () => false,
      rateRefusal: () => undefined,
      verifying: 0,
      limits,
    })
    expect(expected).toBe(authRequired)
    expect(refusedStranger).toEqual(['OK', chat.id, false, expected])

    const member = await t.member()
    const auth = signAuthEvent(t.url, member.challenge, t.ownerSk)
    member.send(['EVENT', auth])
    expect(await member.ok(auth.id)).toEqual([
      'OK',
      auth.id,
      false,
      'invalid: AUTH events are sent with AUTH, not EVENT',
    ])

    const future = t.sign({ created_at: now() + 3600 })
    const large = t.sign({ content: 'more than ten bytes' })
    for (const e of [future, large]) member.send(['EVENT', e])
    const answers = [await member.ok(future.id), await member.ok(large.id)]
    const wanted = [future, large].map((event) =>
      firstRefusal(rejectEventBeforeStore, {
        event,
        raw: JSON.stringify(event),
        now: now(),
        nowMs: Date.now(),
        limits,
        eventLimits: { take: () => undefined },
      }),
    )
    expect(wanted).toEqual([
      'invalid: created_at is more than 900 s in the future; check the clock',
      'invalid: content is larger than 10 bytes',
    ])
    expect(answers).toEqual([
      ['OK', future.id, false, wanted[0]],
      ['OK', large.id, false, wanted[1]],
    ])

    // A frame over max_message_length: OK false naming the event it carries.
    const huge = t.sign({ content: 'x'.repeat(limits.maxFrameBytes) })
    const frame = JSON.stringify(['EVENT', huge])
    member.send(frame)
    const bytes = Buffer.byteLength(frame)
    expect(await member.ok(huge.id)).toEqual([
      'OK',
      huge.id,
      false,
      firstRefusal(rejectFrame, { bytes, limits }),
    ])
    expect(firstRefusal(rejectFrame, { bytes, limits })).toBe(
      `invalid: frame too large (${bytes} bytes, max ${limits.maxFrameBytes})`,
    )
  })

  it('AUTH: OK false with the refusal of rejectAuth', async () => {
    const t = await startTestHub()
    const c = await t.connect()
    const wrong = signAuthEvent(t.url, 'f'.repeat(32), t.ownerSk)
    c.send(['AUTH', wrong])
    expect(await c.ok(wrong.id)).toEqual([
      'OK',
      wrong.id,
      false,
      'invalid: AUTH challenge does not match this connection',
    ])
    const outsider = newSecret()
    const ok = await c.auth(t.url, outsider)
    const expected = firstRefusal(rejectAuth, {
      event: signAuthEvent(t.url, c.challenge, outsider),
      challenge: c.challenge,
      relayUrls: new Set(t.hub.relayUrls),
      now: now(),
      grants: t.hub.grants,
      verifying: 0,
      personHolds: () => 0,
      limits: defaultHubLimits,
    })
    expect(expected).toMatch(/^restricted: /)
    expect(ok[2]).toBe(false)
    expect(ok[3]).toBe(expected)
  })

  it('REQ and NEG-OPEN: NOTICE for the id, CLOSED and NEG-ERR with the list’s refusal', async () => {
    const t = await startTestHub()
    const stranger = await t.connect()
    stranger.send(['REQ', 'x'.repeat(65), { kinds: [9] }])
    expect(await stranger.next((f) => f[0] === 'NOTICE')).toEqual([
      'NOTICE',
      firstRefusal(rejectSubscriptionId, {
        verb: 'REQ',
        subId: 'x'.repeat(65),
        limits: defaultHubLimits,
      }),
    ])
    const closed = await stranger.req('s', { kinds: [9] })
    expect(closed.end).toEqual(['CLOSED', 's', authRequired])
    stranger.send(['NEG-OPEN', 'n', { kinds: [9] }, '61'])
    expect(await stranger.next((f) => f[0] === 'NEG-ERR')).toEqual([
      'NEG-ERR',
      'n',
      firstRefusal(rejectNegOpen, {
        member: false,
        rawFilter: { kinds: [9] },
        message: '61',
        limits: defaultHubLimits,
      }),
    ])

    const member = await t.member()
    const none = await member.req('none')
    const wide = { '#p': ['x'.repeat(defaultHubLimits.maxFilterTagValueLength + 1)] }
    const tooWide = await member.req('wide', wide)
    const reqRefusal = (rawFilters: unknown[]) =>
      firstRefusal(rejectReq, {
        member: true,
        rawFilters,
        filters: [],
        replaces: false,
        subscriptions: 0,
        limits: defaultHubLimits,
      })
    expect(none.end).toEqual(['CLOSED', 'none', 'invalid: REQ takes 1-10 filters'])
    expect(none.end[2]).toBe(reqRefusal([]))
    expect(tooWide.end).toEqual([
      'CLOSED',
      'wide',
      'invalid: filter #p must hold strings (max 1024 chars)',
    ])
    expect(tooWide.end[2]).toBe(reqRefusal([wide]))
  })

  it('the pairing lane: OK false and CLOSED with the refusal of its lists', async () => {
    const t = await startTestHub()
    const c = await t.connect()
    const undated = signEvent(
      { kind: 24140, created_at: now(), tags: [], content: '' },
      newSecret(),
    )
    c.send(['EVENT', undated])
    const expected = firstRefusal(rejectPairingEvent, {
      pid: undefined,
      frameBytes: 0,
      maxFrameBytes: 4096,
      takeEvent: () => true,
      join: () => undefined,
      verifying: 0,
      limits: defaultHubLimits,
    })
    expect(expected).toBe('invalid: a pairing event carries one d tag with the 32-hex pairing id')
    expect(await c.ok(undated.id)).toEqual(['OK', undated.id, false, expected])
    const lane = await c.req('pair', { kinds: [24140], '#d': ['not-a-pairing-id'] })
    expect(lane.end).toEqual([
      'CLOSED',
      'pair',
      firstRefusal(rejectLaneSubscription, {
        pid: undefined,
        join: () => undefined,
        subscribe: () => undefined,
      }),
    ])
    expect(lane.end[2]).toBe('invalid: a pairing id is 32 hex characters')
  })
})
