import { join } from 'node:path'
import { resolveKithHome } from '../../identity/home.js'
import { ControlClient } from '../../node/control.js'
import { controlSocketFile, type ChatItem } from '../../node/daemon.js'

export function connectDaemon(): Promise<ControlClient | undefined> {
  return ControlClient.connect(join(resolveKithHome(), controlSocketFile))
}

const time = (s: number) => new Date(s * 1000).toISOString().slice(11, 16)

/** One line for a chat message: time, channel, author with role, text. */
export function formatChat(item: ChatItem, opts: { channel?: boolean } = {}): string {
  const from = item.from
  const who =
    from.role === 'agent'
      ? `${from.name} [agent, authorized by ${from.authorizedBy ?? '?'}]`
      : from.role === 'unknown'
        ? from.name
        : `${from.name} [${from.role}]`
  const reply = item.event.tags.some((t) => t[0] === 'e') ? '↳ ' : ''
  const channel = opts.channel && item.channel ? `#${item.channel} ` : ''
  return `${time(item.event.created_at)} ${channel}${who}: ${reply}${item.event.content}`
}
