import { randomBytes } from 'node:crypto'
import { KithError } from '../../errors.js'
import { defaultFinishedAfterSeconds, notifyClasses, type NotifyClass } from '../../events/push.js'
import { resolveKithHome } from '../../identity/home.js'
import { loadIdentity } from '../../identity/keys.js'
import { notifyStatus, whereOf } from '../../node/notifications.js'
import { desktopNotifier, sendTo } from '../../notify/senders.js'
import { loadOrCreateVapid } from '../../notify/vapid.js'
import type { NotifyTargetType } from '../../store/notify-store.js'
import { declare } from '../declare.js'
import { parseDuration } from '../duration.js'
import type { Out } from '../io.js'
import { withStore } from '../local-node.js'
import { notifyLines } from './status.js'

export const notifyCommand = declare({
  name: 'notify',
  summary: 'where this node tells you an agent needs you: desktop, ntfy, webhooks, web push',
  usage: [
    'kith notify list [--json]',
    'kith notify add ntfy URL [--on CLASSES] [--after DURATION] [--open URL] [--full-text] [--json]',
    'kith notify add webhook URL [--on CLASSES] [--after DURATION] [--open URL] [--full-text] [--json]',
    'kith notify add desktop [--on CLASSES] [--after DURATION] [--json]',
    'kith notify rm ID',
    'kith notify test [ID] [--json]',
  ],
  subcommands: {
    list: "this node's notification targets, with what was sent and what failed",
    add: 'send notifications to ntfy, a webhook or this desktop',
    rm: 'stop sending to a target',
    test: 'send a test notification now and say what each target answered',
  },
  options: {
    on: {
      type: 'string',
      value: 'CLASSES',
      description: `(add) what notifies, from ${notifyClasses.join(',')} (default: all)`,
    },
    after: {
      type: 'string',
      value: 'DURATION',
      description: `(add) a finished turn notifies if it ran this long (default ${defaultFinishedAfterSeconds / 60}m)`,
    },
    open: {
      type: 'string',
      value: 'URL',
      description: "(add) the web app links open in (default: this node's, kith open)",
    },
    'full-text': {
      type: 'boolean',
      description:
        '(add ntfy/webhook) in a sealed fleet, send the message text too: that server can then read it',
    },
    json: { type: 'boolean', description: 'machine-readable output' },
  },
  about: `A running kith up tells you when an agent needs you: a permission card for an agent of yours
(or in a turn you started), an agent's error, a turn of yours that finished after running a
while, a message that mentions you. Each goes once per target (restarts included); bursts of
more than three become one summary; failures are retried with backoff and shown here and in
kith status.

ntfy URL is a topic URL (https://ntfy.sh/TOPIC; user:password@ for a protected server).
webhook URL gets one JSON POST per notification: {kith, class, event, title, body, link,
channel}. Neither can decide anything: a card is answered in kith chat, kith permit or the web
app. In a sealed fleet (kith-e2e/1) they get who, where and what kind of news, never the text
or the tool call, unless added with --full-text. desktop uses notify-send (apt-get install
libnotify-bin) or osascript.

Web Push goes to a web device (kith open, then Notifications in the app), which picks the node
that sends to it; its subscription reaches that node sealed to its device key, so no other
member and no hub operator learns it. Its cards carry Allow and Reject.`,
})

const usage = (message: string) => new KithError('usage', message)

function parseClasses(text: string | undefined): NotifyClass[] {
  if (text === undefined) return [...notifyClasses]
  const list = text
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '')
  for (const c of list)
    if (!notifyClasses.includes(c as NotifyClass))
      throw usage(`unknown class ${c} (choose from ${notifyClasses.join(', ')})`)
  if (list.length === 0) throw usage(`--on needs at least one of ${notifyClasses.join(', ')}`)
  return [...new Set(list as NotifyClass[])]
}

function parseHttpUrl(text: string | undefined, what: string): string {
  if (text === undefined) throw usage(`kith notify add ${what} needs a URL`)
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw usage(`not a URL: ${text}`)
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw usage(`${what} needs an http(s) URL, not ${url.protocol}`)
  if (what === 'ntfy' && url.pathname.replace(/\//g, '') === '')
    throw usage('an ntfy URL names its topic: https://ntfy.sh/TOPIC')
  return url.toString()
}

export async function runNotify(argv: string[], out: Out): Promise<number> {
  const parsed = notifyCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  const [sub = 'list', ...rest] = positionals
  const id = loadIdentity(resolveKithHome())
  const home = id.home
  if (sub === 'list') {
    if (rest.length > 0) throw usage('kith notify list takes no arguments')
    const targets = withStore(home, (s) => notifyStatus(s))
    if (values.json) out.json({ targets })
    else if (targets.length === 0)
      out.line(
        'no notification targets: kith notify add ntfy|webhook|desktop, or Notifications in the web app',
      )
    else for (const l of notifyLines(targets)) out.line(l)
    return 0
  }
  if (sub === 'add') {
    const [type, url, ...extra] = rest
    if (type !== 'ntfy' && type !== 'webhook' && type !== 'desktop')
      throw usage('kith notify add takes ntfy URL, webhook URL or desktop')
    if (extra.length > 0 || (type === 'desktop' && url !== undefined))
      throw usage(`too many arguments for kith notify add ${type}`)
    if (values['full-text'] && type === 'desktop')
      throw usage('--full-text is for ntfy and webhook targets; the desktop shows the text already')
    if (type === 'desktop' && desktopNotifier() === undefined)
      throw new KithError(
        'not-found',
        'this machine has no notify-send (apt-get install libnotify-bin) or osascript',
      )
    const target = {
      id: `${type}-${randomBytes(3).toString('hex')}`,
      type: type as NotifyTargetType,
      url: type === 'desktop' ? 'desktop' : parseHttpUrl(url, type),
      classes: parseClasses(values.on),
      finishedAfter:
        values.after === undefined ? defaultFinishedAfterSeconds : parseDuration(values.after),
      openBase: values.open === undefined ? undefined : parseHttpUrl(values.open, '--open'),
      device: undefined,
      subscription: undefined,
      createdAt: Math.floor(Date.now() / 1000),
      fullText: values['full-text'] === true,
    }
    withStore(home, (s) => s.notify.putTarget(target))
    if (values.json)
      out.json({
        added: {
          id: target.id,
          type,
          where: whereOf(target),
          classes: target.classes,
          fullText: target.fullText,
        },
      })
    else {
      out.line(
        `added ${target.id}: ${target.classes.join(', ')} → ${whereOf(target)} (kith notify test ${target.id})`,
      )
      if (type !== 'desktop')
        out.line(
          target.fullText
            ? `  ${whereOf(target)} will read the message text of a sealed fleet (--full-text)`
            : '  in a sealed fleet it gets who, where and what kind of news, never the text (--full-text to send it)',
        )
    }
    return 0
  }
  if (sub === 'rm') {
    if (rest.length !== 1) throw usage('kith notify rm takes one ID (kith notify list)')
    const removed = withStore(home, (s) => s.notify.removeTarget(rest[0]!))
    if (!removed)
      throw new KithError('not-found', `no notification target ${rest[0]} (kith notify list)`)
    out.line(`removed ${rest[0]}`)
    return 0
  }
  if (sub === 'test') {
    if (rest.length > 1) throw usage('kith notify test takes at most one ID')
    const targets = withStore(home, (s) => s.notify.targets()).filter(
      (t) => rest[0] === undefined || t.id === rest[0],
    )
    if (targets.length === 0)
      throw new KithError(
        'not-found',
        rest[0] === undefined
          ? 'no notification targets to test'
          : `no notification target ${rest[0]}`,
      )
    const results = await Promise.all(
      targets.map(async (t) => {
        const result = await sendTo(
          t,
          {
            type: 'notify',
            class: 'test',
            tag: 'kith-test',
            title: 'Kith: a test notification',
            body: `from ${id.config.name}, as asked`,
            open: '#/',
          },
          { vapid: () => loadOrCreateVapid(home), webBase: undefined },
          'test',
        )
        withStore(home, (s) =>
          s.notify.markTarget(t.id, result.ok, result.ok ? undefined : result.error, Date.now()),
        )
        return { id: t.id, ok: result.ok, error: result.ok ? null : result.error }
      }),
    )
    if (values.json) out.json({ results })
    else for (const r of results) out.line(`${r.id}: ${r.ok ? 'sent' : `failed: ${r.error}`}`)
    return results.every((r) => r.ok) ? 0 : 1
  }
  throw usage(`unknown subcommand ${sub} (list, add, rm, test)`)
}

export { notifyCommand as command, runNotify as run }
