import { spawn } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'
import type { PushPayload, WebPushSubscription } from '../events/push.js'
import type { NotifyTarget } from '../store/notify-store.js'
import type { Vapid } from './vapid.js'

/**
 * One attempt to deliver one payload to one target. `retry`: worth trying again later (a network
 * failure, a 5xx, a 429); `refused`: the endpoint said no and will say it again (a 4xx), shown
 * in `kith status` and not retried; `gone`: a Web Push subscription that no longer exists.
 */
export type SendResult = { ok: true } | { ok: false; retry: boolean; gone?: boolean; error: string }

export interface SendContext {
  vapid: () => Vapid
  /** The web app's origin links open in, when the target names none (`kith up`'s own). */
  webBase: string | undefined
}

/** How long one HTTP attempt may take. */
const requestTimeoutMs = 10_000

function httpResult(status: number, text: string, what: string): SendResult {
  if (status >= 200 && status < 300) return { ok: true }
  const detail = `${what} answered ${status}${text.trim() === '' ? '' : `: ${text.trim().slice(0, 160)}`}`
  const retry = status >= 500 || status === 408 || status === 429
  return { ok: false, retry, error: detail }
}

function failure(err: unknown, what: string): SendResult {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } }
  const why =
    e.name === 'TimeoutError'
      ? `no answer in ${requestTimeoutMs / 1000} s`
      : (e.cause?.code ?? e.cause?.message ?? e.message ?? String(err))
  return { ok: false, retry: true, error: `${what} unreachable: ${why}` }
}

/** The link a notification opens: the web app at that channel or thread. */
export function linkOf(
  target: NotifyTarget,
  payload: PushPayload,
  ctx: SendContext,
): string | undefined {
  if (payload.type !== 'notify') return undefined
  const base = target.openBase ?? ctx.webBase
  if (base === undefined) return undefined
  return `${base.replace(/\/+$/, '')}/${payload.open}`
}

async function post(
  url: string,
  body: string,
  headers: Record<string, string>,
  what: string,
): Promise<SendResult> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers,
      body,
      redirect: 'error',
      signal: AbortSignal.timeout(requestTimeoutMs),
    })
    return httpResult(res.status, await res.text().catch(() => ''), what)
  } catch (err) {
    return failure(err, what)
  }
}

/**
 * What a third-party target (ntfy, a webhook) is shown: in a fleet that seals, the brief (no
 * message text, no tool call), unless the target was added with --full-text.
 */
export function shownTo(
  target: NotifyTarget,
  payload: PushPayload,
): { title: string; body: string } {
  if (payload.type !== 'notify') return { title: '', body: '' }
  if (payload.brief !== undefined && !target.fullText) return payload.brief
  return { title: payload.title, body: payload.body }
}

/** ntfy's JSON publishing: POST to the server's root with the topic in the body (UTF-8 safe). */
function ntfy(target: NotifyTarget, payload: PushPayload, ctx: SendContext): Promise<SendResult> {
  if (payload.type !== 'notify') return Promise.resolve({ ok: true })
  const { title, body } = shownTo(target, payload)
  const url = new URL(target.url)
  const topic = url.pathname.replace(/^\/+|\/+$/g, '')
  const click = linkOf(target, payload, ctx)
  const message = {
    topic,
    title,
    message: body === '' ? title : body,
    priority: payload.class === 'cards' || payload.class === 'errors' ? 4 : 3,
    tags: [
      payload.class === 'cards' ? 'raising_hand' : payload.class === 'errors' ? 'warning' : 'robot',
    ],
    ...(click === undefined ? {} : { click }),
  }
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (url.username !== '')
    headers.authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`
  url.username = ''
  url.password = ''
  return post(`${url.origin}/`, JSON.stringify(message), headers, 'ntfy')
}

/** A webhook: one JSON POST per notification; nothing it answers can decide anything. */
function webhook(
  target: NotifyTarget,
  payload: PushPayload,
  ctx: SendContext,
  eventId: string,
): Promise<SendResult> {
  if (payload.type !== 'notify') return Promise.resolve({ ok: true })
  const shown = shownTo(target, payload)
  const body = {
    kith: 'notify/1',
    class: payload.class,
    event: eventId,
    title: shown.title,
    body: shown.body,
    link: linkOf(target, payload, ctx) ?? null,
    channel: payload.card?.channel ?? null,
  }
  return post(
    target.url,
    JSON.stringify(body),
    { 'content-type': 'application/json', 'user-agent': 'kith-notify/1' },
    'the webhook',
  )
}

async function webPush(
  target: NotifyTarget,
  payload: PushPayload,
  ctx: SendContext,
): Promise<SendResult> {
  if (target.subscription === undefined)
    return { ok: false, retry: false, error: 'no subscription' }
  const subscription = JSON.parse(target.subscription) as WebPushSubscription
  const vapid = ctx.vapid()
  const card = payload.type === 'notify' && payload.card !== undefined
  try {
    // Loaded with the first push: a node that never sends one does not carry it.
    const { default: webpush } = await import('web-push')
    // The browser is a device of the person: it gets the full text, sealed to it (RFC 8291).
    const sent = payload.type === 'notify' ? { ...payload, brief: undefined } : payload
    await webpush.sendNotification(subscription, JSON.stringify(sent), {
      vapidDetails: {
        subject: vapid.subject,
        publicKey: vapid.publicKey,
        privateKey: vapid.privateKey,
      },
      // A card is worth delivering until it expires; news for a day.
      TTL: card ? 600 : 86_400,
      urgency: card || payload.type === 'withdraw' ? 'high' : 'normal',
      timeout: requestTimeoutMs,
    })
    return { ok: true }
  } catch (err) {
    const status = (err as { statusCode?: number }).statusCode
    if (status === 404 || status === 410)
      return {
        ok: false,
        retry: false,
        gone: true,
        error: `the push service says this subscription is gone (${status})`,
      }
    if (typeof status === 'number')
      return httpResult(status, bodyText((err as { body?: unknown }).body), 'the push service')
    return failure(err, 'the push service')
  }
}

const bodyText = (body: unknown) => (typeof body === 'string' ? body : '')

/** The desktop notifier of this machine, if it has one. */
export function desktopNotifier(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const names = process.platform === 'darwin' ? ['osascript'] : ['notify-send']
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    for (const name of names) {
      const path = join(dir, name)
      try {
        accessSync(path, constants.X_OK)
        return path
      } catch {
        // Not in this directory of PATH: look in the next.
      }
    }
  }
  return undefined
}

function desktop(payload: PushPayload): Promise<SendResult> {
  if (payload.type !== 'notify') return Promise.resolve({ ok: true })
  const tool = desktopNotifier()
  if (tool === undefined)
    return Promise.resolve({
      ok: false,
      retry: false,
      error: 'no notify-send (apt-get install libnotify-bin) or osascript on PATH',
    })
  const args = tool.endsWith('osascript')
    ? [
        '-e',
        `display notification ${JSON.stringify(payload.body)} with title ${JSON.stringify(payload.title)}`,
      ]
    : [
        '--app-name=Kith',
        `--urgency=${payload.class === 'cards' ? 'critical' : 'normal'}`,
        payload.title,
        payload.body,
      ]
  return new Promise((resolve) => {
    const child = spawn(tool, args, { stdio: ['ignore', 'ignore', 'pipe'] })
    let err = ''
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    child.on('error', (e) => resolve({ ok: false, retry: false, error: `${tool}: ${e.message}` }))
    child.on('close', (code) =>
      resolve(
        code === 0
          ? { ok: true }
          : {
              ok: false,
              retry: true,
              error: `${tool} exited ${code}: ${err.trim().slice(0, 160)}`,
            },
      ),
    )
  })
}

/** Sends one payload to one target, whatever its kind. */
export function sendTo(
  target: NotifyTarget,
  payload: PushPayload,
  ctx: SendContext,
  eventId: string,
): Promise<SendResult> {
  switch (target.type) {
    case 'webpush':
      return webPush(target, payload, ctx)
    case 'ntfy':
      return ntfy(target, payload, ctx)
    case 'webhook':
      return webhook(target, payload, ctx, eventId)
    case 'desktop':
      return desktop(payload)
  }
}
