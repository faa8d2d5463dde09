import { useSignal } from '@preact/signals'
import { decrypt as nip44Decrypt, getConversationKey } from 'nostr-tools/nip44'
import {
  defaultFinishedAfterSeconds,
  notifyClasses,
  type NotifyClass,
} from '../../../browser-core.js'
import type { FleetClient } from '../lib/fleet-client.js'

const labels: Record<NotifyClass, string> = {
  cards: 'Permission cards (Reject from the notification; Allow in the app)',
  errors: "An agent's errors and crashes",
  finished: 'A turn of mine finished after running a while',
  mentions: 'Messages that mention me',
}

function keyBytes(base64url: string): Uint8Array<ArrayBuffer> {
  const text = atob(base64url.replace(/-/g, '+').replace(/_/g, '/'))
  const out = new Uint8Array(text.length)
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i)
  return out
}

/** What this browser chose last time (its own subscription opens with its own key). */
function current(
  client: FleetClient,
): { sender: string; classes: NotifyClass[]; after: number; on: boolean } | undefined {
  const sub = client.model.pushSubscription()
  if (sub === undefined) return undefined
  try {
    const body = JSON.parse(
      nip44Decrypt(sub.event.content, getConversationKey(client.device.secret, sub.sender)),
    ) as { off?: boolean; classes?: NotifyClass[]; finishedAfter?: number }
    return {
      sender: sub.sender,
      on: body.off !== true,
      classes: body.classes ?? [...notifyClasses],
      after: body.finishedAfter ?? defaultFinishedAfterSeconds,
    }
  } catch {
    return undefined
  }
}

/**
 * Notifications for this browser (kith-notify/1): which of this person's nodes sends them, and
 * what notifies. Turning them on asks the browser for a push subscription and hands it, sealed,
 * to that node; cards arrive with Reject, answered by the service worker; Allow opens the app.
 */
export function NotifySettings({ client }: { client: FleetClient }) {
  const m = client.model
  void m.revision.value
  const senders = m.pushSendersOfMine()
  const was = current(client)
  const chosen = useSignal<string | undefined>(undefined)
  const classes = useSignal<NotifyClass[] | undefined>(undefined)
  const after = useSignal<number | undefined>(undefined)
  const status = useSignal<string>('')
  const busy = useSignal(false)
  const supported =
    'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window
  const sender = chosen.value ?? (was?.on === true ? was.sender : senders[0]?.device)
  const picked = classes.value ?? was?.classes ?? [...notifyClasses]
  const minutes = Math.round((after.value ?? was?.after ?? defaultFinishedAfterSeconds) / 60)

  const turnOn = async () => {
    const s = senders.find((x) => x.device === sender)
    if (s === undefined) return
    busy.value = true
    status.value = 'asking this browser…'
    try {
      if ((await Notification.requestPermission()) !== 'granted')
        throw new Error('this browser was not allowed to show notifications')
      const reg = await navigator.serviceWorker.ready
      let sub = await reg.pushManager.getSubscription()
      if (sub === null)
        sub = await reg.pushManager.subscribe({
          userVisibleOnly: true,
          applicationServerKey: keyBytes(s.vapid),
        })
      const json = sub.toJSON() as { endpoint: string; keys: { p256dh: string; auth: string } }
      await client.setPush(
        {
          subscription: { endpoint: json.endpoint, keys: json.keys },
          classes: picked,
          finishedAfter: minutes * 60,
        },
        s.device,
      )
      status.value = `on: ${m.who(s.device).name} sends them`
    } catch (err) {
      status.value = `not on: ${err instanceof Error ? err.message : String(err)}`
    } finally {
      busy.value = false
    }
  }

  const turnOff = async () => {
    if (was === undefined) return
    busy.value = true
    try {
      await client.setPush({ off: true }, was.sender)
      const reg = await navigator.serviceWorker.ready
      await (await reg.pushManager.getSubscription())?.unsubscribe()
      status.value = 'off'
    } catch (err) {
      status.value = `could not turn off: ${err instanceof Error ? err.message : String(err)}`
    } finally {
      busy.value = false
    }
  }

  const toggle = (c: NotifyClass) => {
    classes.value = picked.includes(c) ? picked.filter((x) => x !== c) : [...picked, c]
  }

  return (
    <section class="notify" aria-labelledby="notify-title">
      <h3 id="notify-title">Notifications on this browser</h3>
      {!supported && <p class="muted">This browser cannot receive Web Push here.</p>}
      {supported && senders.length === 0 && (
        <p class="muted">
          None of your nodes sends Web Push yet: run <code>kith up</code> (any recent one does).
        </p>
      )}
      {supported && senders.length > 0 && (
        <form
          onSubmit={(e) => {
            e.preventDefault()
            void turnOn()
          }}
        >
          <label>
            Sent by{' '}
            <select
              value={sender}
              onChange={(e) => (chosen.value = (e.target as HTMLSelectElement).value)}
            >
              {senders.map((s) => (
                <option key={s.device} value={s.device}>
                  {m.who(s.device).name}
                  {m.online(s.device) ? '' : m.lastSeen(s.device) === undefined ? '' : ' (offline)'}
                </option>
              ))}
            </select>
          </label>
          <fieldset>
            {notifyClasses.map((c) => (
              <label key={c} class="check">
                <input type="checkbox" checked={picked.includes(c)} onChange={() => toggle(c)} />{' '}
                {labels[c]}
              </label>
            ))}
            <label>
              …running at least{' '}
              <input
                type="number"
                min={0}
                value={minutes}
                onInput={(e) => (after.value = Number((e.target as HTMLInputElement).value) * 60)}
              />{' '}
              min
            </label>
          </fieldset>
          <button type="submit" disabled={busy.value || picked.length === 0}>
            {was?.on === true ? 'Save' : 'Turn on'}
          </button>{' '}
          {was?.on === true && (
            <button type="button" disabled={busy.value} onClick={() => void turnOff()}>
              Turn off
            </button>
          )}
          <p class="status" role="status">
            {status.value !== ''
              ? status.value
              : was?.on === true
                ? `on: ${m.who(was.sender).name} sends them`
                : 'off'}
          </p>
        </form>
      )}
    </section>
  )
}
