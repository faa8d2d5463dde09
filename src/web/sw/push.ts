/// <reference lib="webworker" />
import {
  cardActionSigns,
  cardNotificationActions,
  Kind,
  makePermissionDecision,
  parsePushPayload,
  authenticate,
  defaultRelayTimeoutMs,
  RelayClient,
  outboxOutcome,
  signEvent,
  type EventTemplate,
  type PushPayload,
} from '../../browser-core.js'
import { loadDevice, type Device } from '../app/lib/device.js'
import { keysForChannel } from './seal.js'

/**
 * Web Push in the service worker (kith-notify/1): a push shows a notification (a card with
 * Reject), a withdrawal closes one, and Reject on a card signs the 4143 decision with this
 * device's key (sealed, in a fleet that seals) and sends it to the fleet's hubs without opening
 * the app. Allow is never signed here: a tap opens the app at the card, where the person clicks.
 */
const sw = self as unknown as ServiceWorkerGlobalScope

type NotifyPayload = Extract<PushPayload, { type: 'notify' }>

const requestTimeoutMs = defaultRelayTimeoutMs

export async function onPush(text: string): Promise<void> {
  const payload = parsePushPayload(text)
  if (payload.type === 'withdraw') {
    for (const n of await sw.registration.getNotifications({ tag: payload.tag })) n.close()
    return
  }
  const card = payload.card
  const actions = card?.reject === undefined ? [] : cardNotificationActions.map((a) => ({ ...a }))
  await sw.registration.showNotification(payload.title, {
    body: payload.body,
    tag: payload.tag,
    data: payload,
    icon: '/icons/icon-192.png',
    requireInteraction: card !== undefined,
    ...(actions.length === 0 ? {} : { actions }),
  })
}

/**
 * Signs `template` (sealed when the fleet seals, or the card says it does) and sends it, with
 * any key envelopes the seal needs first, to each hub of the device until one takes it.
 */
async function publishAnywhere(
  template: EventTemplate,
  device: Device,
  channel: string,
  cardSealed: boolean,
): Promise<string> {
  const { hubs, chain, grant } = device.record
  const secret = device.secret
  const errors: string[] = []
  for (const url of hubs) {
    let client: RelayClient | undefined
    try {
      client = await RelayClient.connect(new WebSocket(url), { url, timeoutMs: requestTimeoutMs })
      const auth = await authenticate(client, { url, secret, chain: [...chain, grant] })
      if (auth.code === 'no-challenge') throw new Error('no AUTH challenge')
      if (auth.code !== 'ok') throw new Error(`AUTH refused: ${auth.message}`)
      const { keys, first } = await keysForChannel(device, client, channel)
      const { before, event } =
        cardSealed || keys.seals(template)
          ? keys.seal(template)
          : { before: [], event: signEvent(template, secret) }
      // The channel's definition first (a hub without it takes the channel for open), then the
      // key envelopes, then the event.
      for (const e of [...first(event), ...before]) {
        // What an answer means is the outboxes' rule (link/outbox-answer.ts); this worker has no
        // outbox to keep an event in, so anything but delivered fails this hub and the next is tried.
        const took = outboxOutcome(await client.publish(e))
        if (took.outcome !== 'delivered')
          throw new Error(
            `${e.kind === Kind.KeyEnvelope ? 'key envelope' : 'definition'} refused: ${took.message}`,
          )
      }
      const ok = outboxOutcome(await client.publish(event))
      if (ok.outcome === 'delivered') return url
      errors.push(`${url}: ${ok.message}`)
    } catch (err) {
      errors.push(`${url}: ${err instanceof Error ? err.message : String(err)}`)
    } finally {
      client?.close()
    }
  }
  throw new Error(errors.join('; ') || 'this device has no hubs')
}

/** Reject on a card's notification: the decision, signed here and sent. */
async function decide(payload: NotifyPayload, action: 'reject'): Promise<void> {
  const card = payload.card
  const optionId = action === 'reject' ? card?.reject : undefined
  if (card === undefined || optionId === undefined) return
  const device = await loadDevice()
  if (device === undefined) throw new Error('this browser is not paired any more')
  const decision = makePermissionDecision(
    {
      request: { id: card.id, channel: card.channel, agent: card.agent },
      fleet: card.fleet,
      optionId,
    },
    Math.floor(Date.now() / 1000),
  )
  try {
    // Whether the fleet seals is the hub's to tell (its setting events), unless the card says so.
    await publishAnywhere(decision, device, card.channel, card.sealed === true)
  } catch (err) {
    // Nothing was decided: say so where the person looks, and keep the way to the card open.
    await sw.registration.showNotification(`Not sent: ${payload.title}`, {
      body: `${err instanceof Error ? err.message : String(err)}. Open the app to answer.`,
      tag: payload.tag,
      data: { ...payload, card: undefined },
    })
  }
}

async function openApp(path: string): Promise<void> {
  const url = new URL(`/${path}`, sw.location.origin).toString()
  for (const c of await sw.clients.matchAll({ type: 'window', includeUncontrolled: true })) {
    if ('focus' in c) {
      await c.navigate(url).catch(() => undefined)
      await c.focus()
      return
    }
  }
  await sw.clients.openWindow(url)
}

export async function onNotificationClick(
  notification: Notification,
  action: string,
): Promise<void> {
  const payload = notification.data as NotifyPayload | undefined
  notification.close()
  if (payload === undefined) return
  // Only a refusal is signed without the person; anything else opens the card in the app.
  const signs = cardActionSigns(action)
  if (signs !== undefined && payload.card !== undefined) {
    await decide(payload, signs)
    return
  }
  await openApp(payload.open)
}

sw.addEventListener('push', (event) => {
  event.waitUntil(
    onPush(event.data?.text() ?? '').catch((err: unknown) => console.error('kith push:', err)),
  )
})

sw.addEventListener('notificationclick', (event) => {
  event.waitUntil(onNotificationClick(event.notification, event.action))
})
