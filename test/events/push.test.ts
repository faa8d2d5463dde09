import { readFileSync } from 'node:fs'
import { hexToBytes } from '@noble/hashes/utils.js'
import { encrypt, getConversationKey } from 'nostr-tools/nip44'
import { describe, expect, it } from 'vitest'
import { KithError } from '../../src/errors.js'
import { signEvent, verifyEventSignature, type NostrEvent } from '../../src/events/event.js'
import {
  makePushSubscription,
  openPushSubscription,
  parsePushPayload,
  parsePushSender,
  parsePushSubscription,
  type PushSubscriptionBody,
} from '../../src/events/push.js'
import { newKey } from '../helpers/secrets.js'

interface Vectors {
  senderSecret: string
  sender: string
  webSecret: string
  web: string
  nonce: string
  senderEvent: NostrEvent
  subscription: { body: PushSubscriptionBody; event: NostrEvent }
  off: { body: PushSubscriptionBody; event: NostrEvent }
  payloads: Record<string, unknown>
  invalidPayloads: string[]
}

const v = JSON.parse(
  readFileSync(new URL('../vectors/notify.json', import.meta.url), 'utf8'),
) as Vectors

function refusal(fn: () => unknown): KithError {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(KithError)
    return err as KithError
  }
  throw new Error('expected a refusal')
}

describe('kith-notify/1 vectors (test/vectors/notify.json)', () => {
  it('reads the sender announcement and the sealed subscription, which only the sender opens', () => {
    expect(verifyEventSignature(v.senderEvent)).toBe(true)
    expect(parsePushSender(v.senderEvent)).toEqual({
      device: v.sender,
      vapid: (JSON.parse(v.senderEvent.content) as { vapid: string }).vapid,
    })
    for (const s of [v.subscription, v.off]) {
      expect(verifyEventSignature(s.event)).toBe(true)
      expect(parsePushSubscription(s.event)).toMatchObject({ device: v.web, sender: v.sender })
      // The content is exactly NIP-44 v2 of the body, with this nonce.
      const key = getConversationKey(hexToBytes(v.webSecret), v.sender)
      expect(encrypt(JSON.stringify(s.body), key, hexToBytes(v.nonce))).toBe(s.event.content)
      expect(openPushSubscription(s.event, hexToBytes(v.senderSecret))).toEqual(s.body)
    }
    expect(v.subscription.event.tags).toEqual([
      ['d', 'kith-push'],
      ['p', v.sender],
    ])
    // Nothing of the endpoint or its keys is visible on the wire.
    expect(JSON.stringify(v.subscription.event)).not.toContain('push.example')
  })

  it('refuses a subscription opened by anyone but its sender, a tampered one, and bad bodies', () => {
    const other = newKey()
    const e = refusal(() => openPushSubscription(v.subscription.event, other.sk))
    expect([e.code, e.reason]).toEqual(['invalid', 'bad-push'])
    const c = v.subscription.event.content
    const tampered = {
      ...v.subscription.event,
      content: `${c.slice(0, 40)}${c[40] === 'A' ? 'B' : 'A'}${c.slice(41)}`,
    }
    expect(refusal(() => openPushSubscription(tampered, hexToBytes(v.senderSecret))).reason).toBe(
      'bad-push',
    )
    const web = newKey()
    const sub = (body: unknown) => () =>
      makePushSubscription(body as PushSubscriptionBody, web.sk, v.sender, 1)
    expect(
      refusal(
        sub({
          subscription: { endpoint: 'http://plain.example/x', keys: { p256dh: 'a', auth: 'b' } },
          classes: ['cards'],
          finishedAfter: 0,
        }),
      ).message,
    ).toMatch(/https URL/)
    expect(
      refusal(
        sub({
          subscription:
            v.subscription.body.off === true ? undefined : v.subscription.body.subscription,
          classes: ['everything'],
          finishedAfter: 0,
        }),
      ).message,
    ).toMatch(/classes must be/)
    expect(
      refusal(() => makePushSubscription({ off: true }, web.sk, 'not-a-key', 1)).message,
    ).toMatch(/64-hex/)
    // Two p tags (which sender?) are refused.
    const twoP = signEvent(
      {
        ...v.subscription.event,
        tags: [
          ['d', 'kith-push'],
          ['p', v.sender],
          ['p', v.web],
        ],
      },
      web.sk,
    )
    expect(refusal(() => parsePushSubscription(twoP)).message).toMatch(/exactly one p/)
  })

  it('reads every payload kind and refuses the malformed ones', () => {
    for (const p of Object.values(v.payloads))
      expect(parsePushPayload(JSON.stringify(p))).toEqual(p)
    for (const bad of v.invalidPayloads) {
      const e = refusal(() => parsePushPayload(bad))
      expect([e.code, e.reason]).toEqual(['invalid', 'bad-push'])
    }
  })
})
