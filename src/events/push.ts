import {
  decrypt as nip44Decrypt,
  encrypt as nip44Encrypt,
  getConversationKey,
} from 'nostr-tools/nip44'
import { KithError } from '../errors.js'
import { isHex64, type EventTemplate, type NostrEvent } from './event.js'
import { Kind } from './kinds.js'

/**
 * kith-notify/1: how a node learns where to push its person's notifications, and what a push
 * carries. Two addressable kinds (nips/kith-notify.md):
 *
 * - 34160, a **push sender**: a node that can send Web Push says so, with its VAPID public key
 *   (public: browsers need it to subscribe). `d` = `kith-push`.
 * - 34161, a **push subscription**: a device (the web app) hands one sender its Web Push
 *   subscription and its choices. `d` = `kith-push`, `p` = the sender device; the content is
 *   NIP-44 v2 encrypted from the subscribing device to that sender, so no other member and no
 *   hub operator learns the endpoint or its keys. A newer one replaces it (addressable); one
 *   naming another sender, or `off`, ends this sender's deliveries to that device.
 */

export const pushD = 'kith-push'

/** What may notify a person (each device chooses). */
export const notifyClasses = ['cards', 'errors', 'finished', 'mentions'] as const
export type NotifyClass = (typeof notifyClasses)[number]

/** A turn that ran at least this long notifies when it ends (unless the device says otherwise). */
export const defaultFinishedAfterSeconds = 120

export interface PushChoices {
  classes: NotifyClass[]
  /** `finished` notifies only for turns that ran at least this long. */
  finishedAfter: number
}

/** A browser's Web Push subscription (PushSubscription.toJSON()). */
export interface WebPushSubscription {
  endpoint: string
  keys: { p256dh: string; auth: string }
}

export type PushSubscriptionBody =
  ({ off?: false; subscription: WebPushSubscription } & PushChoices) | { off: true }

export interface ParsedPushSubscription {
  /** The subscribing device. */
  device: string
  /** The sender it is addressed to. */
  sender: string
  createdAt: number
  id: string
}

function bad(message: string): KithError {
  return new KithError('invalid', message, { reason: 'bad-push' })
}

const base64url = /^[A-Za-z0-9_-]+={0,2}$/

/** Checks choices from untrusted JSON: known classes only, a sane threshold. */
export function parseChoices(value: unknown): PushChoices {
  const o = (value ?? {}) as Record<string, unknown>
  const classes = o.classes
  if (!Array.isArray(classes) || classes.some((c) => !notifyClasses.includes(c as NotifyClass)))
    throw bad(`classes must be a list of ${notifyClasses.join(', ')}`)
  const finishedAfter = o.finishedAfter ?? defaultFinishedAfterSeconds
  if (typeof finishedAfter !== 'number' || !Number.isInteger(finishedAfter) || finishedAfter < 0)
    throw bad('finishedAfter must be a whole number of seconds')
  return { classes: [...new Set(classes as NotifyClass[])], finishedAfter }
}

/** Checks a Web Push subscription: an https endpoint and its two base64url keys. */
export function parseWebPushSubscription(value: unknown): WebPushSubscription {
  const o = (value ?? {}) as Record<string, unknown>
  const keys = (o.keys ?? {}) as Record<string, unknown>
  const endpoint = o.endpoint
  if (
    typeof endpoint !== 'string' ||
    !/^https:\/\/[^\s]+$/.test(endpoint) ||
    endpoint.length > 2048
  )
    throw bad('the subscription endpoint must be an https URL')
  const { p256dh, auth } = keys
  if (typeof p256dh !== 'string' || !base64url.test(p256dh) || p256dh.length > 200)
    throw bad('the subscription has no p256dh key')
  if (typeof auth !== 'string' || !base64url.test(auth) || auth.length > 100)
    throw bad('the subscription has no auth secret')
  return { endpoint, keys: { p256dh, auth } }
}

/** The sender announcement a node signs with its device key. */
export function makePushSender(vapidPublicKey: string, createdAt: number): EventTemplate {
  if (!base64url.test(vapidPublicKey)) throw bad('the VAPID public key is not base64url')
  return {
    kind: Kind.PushSender,
    created_at: createdAt,
    tags: [['d', pushD]],
    content: JSON.stringify({ vapid: vapidPublicKey }),
  }
}

export function parsePushSender(event: NostrEvent): { device: string; vapid: string } {
  if (event.kind !== Kind.PushSender) throw bad(`a push sender is kind ${Kind.PushSender}`)
  if (!event.tags.some((t) => t[0] === 'd' && t[1] === pushD)) throw bad('no d=kith-push tag')
  let vapid: unknown
  try {
    vapid = (JSON.parse(event.content) as Record<string, unknown>).vapid
  } catch {
    throw bad('the push sender content is not JSON')
  }
  if (typeof vapid !== 'string' || !base64url.test(vapid) || vapid.length > 200)
    throw bad('the push sender has no VAPID key')
  return { device: event.pubkey, vapid }
}

/**
 * The subscription a device signs for one sender: `d`, `p` = sender; the body sealed to the
 * sender (NIP-44 v2 with the conversation key of the device's secret and the sender's key).
 */
export function makePushSubscription(
  body: PushSubscriptionBody,
  deviceSecret: Uint8Array,
  sender: string,
  createdAt: number,
): EventTemplate {
  if (!isHex64(sender)) throw bad('the sender must be a 64-hex device key')
  if (body.off !== true) {
    parseWebPushSubscription(body.subscription)
    parseChoices(body)
  }
  return {
    kind: Kind.PushSubscription,
    created_at: createdAt,
    tags: [
      ['d', pushD],
      ['p', sender],
    ],
    content: nip44Encrypt(JSON.stringify(body), getConversationKey(deviceSecret, sender)),
  }
}

/** Reads the public part of a subscription: who subscribes, through whom. */
export function parsePushSubscription(event: NostrEvent): ParsedPushSubscription {
  if (event.kind !== Kind.PushSubscription)
    throw bad(`a push subscription is kind ${Kind.PushSubscription}`)
  if (!event.tags.some((t) => t[0] === 'd' && t[1] === pushD)) throw bad('no d=kith-push tag')
  const p = event.tags.filter((t) => t[0] === 'p')
  if (p.length !== 1 || !isHex64(p[0]![1] ?? ''))
    throw bad('expected exactly one p tag (the sender)')
  return { device: event.pubkey, sender: p[0]![1]!, createdAt: event.created_at, id: event.id }
}

/** Opens a subscription addressed to this sender (its secret); a coded error if it is not. */
export function openPushSubscription(
  event: NostrEvent,
  senderSecret: Uint8Array,
): PushSubscriptionBody {
  let body: Record<string, unknown>
  try {
    body = JSON.parse(
      nip44Decrypt(event.content, getConversationKey(senderSecret, event.pubkey)),
    ) as Record<string, unknown>
  } catch (cause) {
    throw new KithError('invalid', 'the push subscription does not open with this key', {
      cause,
      reason: 'bad-push',
    })
  }
  if (body.off === true) return { off: true }
  return {
    subscription: parseWebPushSubscription(body.subscription),
    ...parseChoices(body),
  }
}

/**
 * What a push carries (RFC 8291-encrypted by the sender; the service worker reads it). A
 * `card` can be answered from the notification: it carries what a 4143 decision repeats.
 * `withdraw` closes the notification of that tag on every device. Small enough for any push
 * service (well under 3 KB: titles are cut).
 */
export type PushPayload =
  | {
      type: 'notify'
      class: NotifyClass | 'summary' | 'test'
      /** The notification's tag: the event id (a card's withdraw names it). */
      tag: string
      title: string
      body: string
      /** Path and hash in the web app: `#/c/CHANNEL/t/THREAD`. */
      open: string
      card?: {
        id: string
        channel: string
        agent: string
        fleet: string
        allow?: string
        reject?: string
        /**
         * The fleet seals its channels (kith-e2e/1): the service worker seals the decision
         * (kith-notify/1, Actions).
         */
        sealed?: boolean
      }
      /**
       * In a fleet that seals: the notification without the sealed content (no message text,
       * no tool call), what a third-party target (ntfy, a webhook) is sent unless it was added
       * with --full-text. Never part of a Web Push payload.
       */
      brief?: { title: string; body: string }
    }
  | { type: 'withdraw'; tag: string }

const cut = (text: string, n: number) => (text.length <= n ? text : `${text.slice(0, n - 1)}…`)

/** Shortens the texts so the encrypted record stays small. */
export function boundPayload(p: PushPayload): PushPayload {
  if (p.type !== 'notify') return p
  return { ...p, title: cut(p.title, 120), body: cut(p.body, 600) }
}

/** Reads a payload from a push (untrusted bytes until checked). */
export function parsePushPayload(text: string): PushPayload {
  let o: Record<string, unknown>
  try {
    o = JSON.parse(text) as Record<string, unknown>
  } catch {
    throw bad('the push payload is not JSON')
  }
  if (o.type === 'withdraw' && typeof o.tag === 'string') return { type: 'withdraw', tag: o.tag }
  if (
    o.type !== 'notify' ||
    typeof o.tag !== 'string' ||
    typeof o.title !== 'string' ||
    typeof o.body !== 'string' ||
    typeof o.open !== 'string' ||
    typeof o.class !== 'string'
  )
    throw bad('the push payload is not a kith notification')
  const payload = o as unknown as PushPayload
  if (payload.type === 'notify' && payload.card !== undefined) {
    const c = payload.card as unknown as Record<string, unknown>
    for (const k of ['id', 'agent', 'fleet'])
      if (typeof c[k] !== 'string' || !isHex64(c[k])) throw bad(`the card has no ${k}`)
    if (typeof c.channel !== 'string') throw bad('the card has no channel')
  }
  return payload
}

/**
 * The action a card's notification offers, and what the service worker may sign for one
 * (kith-notify/1, Actions). A notification action can be taken from a locked screen, with no
 * one proving they are the person: so it may refuse, never permit. Reject is signed at once;
 * Allow is not an action at all: a tap (or any other action, such as an `allow` from a
 * notification an older worker showed) opens the app at the card, whose Allow button is the
 * person's own click in the page.
 */
export const cardNotificationActions: readonly { action: 'reject'; title: string }[] = [
  { action: 'reject', title: 'Reject' },
]

/** The option the service worker signs for this notification action, or undefined: open the app. */
export function cardActionSigns(action: string): 'reject' | undefined {
  return action === 'reject' ? 'reject' : undefined
}
