/// <reference lib="webworker" />
import {
  makePermissionDecision,
  parsePushPayload,
  RelayClient,
  signAuthEvent,
  signEvent,
  type NostrEvent,
  type PushPayload,
} from '../../browser-core.js'
import { loadDevice } from '../app/lib/device.js'

/**
 * Web Push in the service worker (kith-notify/1): a push shows a notification (a card with
 * Allow and Reject), a withdrawal closes one, and an action on a card signs the 4143 decision
 * with this device's key and sends it to the fleet's hubs without opening the app.
 */
const sw = self as unknown as ServiceWorkerGlobalScope

type NotifyPayload = Extract<PushPayload, { type: 'notify' }>

const requestTimeoutMs = 10_000

export async function onPush(text: string): Promise<void> {
  const payload = parsePushPayload(text)
  if (payload.type === 'withdraw') {
    for (const n of await sw.registration.getNotifications({ tag: payload.tag })) n.close()
    return
  }
  const card = payload.card
  const actions: { action: string; title: string }[] = []
  // In a fleet that seals (kith-e2e/1) a decision must be sealed, which needs the app's keys.
  const actionable = card !== undefined && card.sealed !== true
  if (actionable && card.allow !== undefined) actions.push({ action: 'allow', title: 'Allow' })
  if (actionable && card.reject !== undefined) actions.push({ action: 'reject', title: 'Reject' })
  await sw.registration.showNotification(payload.title, {
    body: card?.sealed === true ? `${payload.body} · open Kith to answer` : payload.body,
    tag: payload.tag,
    data: payload,
    icon: '/icons/icon-192.png',
    requireInteraction: card !== undefined,
    ...(actions.length === 0 ? {} : { actions }),
  })
}

/** Sends a signed event to each hub of the device until one takes it. */
async function publishAnywhere(
  event: NostrEvent,
  hubs: string[],
  secret: Uint8Array,
  chain: NostrEvent[],
): Promise<string> {
  const errors: string[] = []
  for (const url of hubs) {
    let client: RelayClient | undefined
    try {
      client = await RelayClient.connect(new WebSocket(url), { url, timeoutMs: requestTimeoutMs })
      const challenge = await client.challenge(3_000)
      if (challenge === undefined) throw new Error('no AUTH challenge')
      for (const e of chain) await client.publish(e)
      const auth = await client.auth(signAuthEvent(url, challenge, secret))
      if (!auth.ok) throw new Error(`AUTH refused: ${auth.message}`)
      const ok = await client.publish(event)
      if (ok.ok || ok.message.startsWith('duplicate:')) return url
      errors.push(`${url}: ${ok.message}`)
    } catch (err) {
      errors.push(`${url}: ${err instanceof Error ? err.message : String(err)}`)
    } finally {
      client?.close()
    }
  }
  throw new Error(errors.join('; ') || 'this device has no hubs')
}

/** Allow or Reject on a card's notification: the decision, signed here and sent. */
async function decide(payload: NotifyPayload, action: 'allow' | 'reject'): Promise<void> {
  const card = payload.card
  const optionId = action === 'allow' ? card?.allow : card?.reject
  if (card === undefined || optionId === undefined) return
  const device = await loadDevice()
  if (device === undefined) throw new Error('this browser is not paired any more')
  const decision = signEvent(
    makePermissionDecision(
      {
        request: { id: card.id, channel: card.channel, agent: card.agent },
        fleet: card.fleet,
        optionId,
      },
      Math.floor(Date.now() / 1000),
    ),
    device.secret,
  )
  try {
    await publishAnywhere(decision, device.record.hubs, device.secret, [
      ...device.record.chain,
      device.record.grant,
    ])
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
  if (
    (action === 'allow' || action === 'reject') &&
    payload.card !== undefined &&
    payload.card.sealed !== true
  ) {
    await decide(payload, action)
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
