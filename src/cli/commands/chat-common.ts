import { join } from 'node:path'
import { KithError } from '../../errors.js'
import { resolveKithHome } from '../../identity/home.js'
import { loadIdentity, type Identity } from '../../identity/keys.js'
import { ControlClient } from '../../node/control.js'
import { controlSocketFile, type ChatItem } from '../../node/daemon.js'
import { GrantBook } from '../../node/grant-book.js'
import { Names } from '../../node/names.js'
import { NodeStore } from '../../store/node-store.js'

/** This machine's node.db opened directly (no daemon), with names for display. */
export function withLocalNode<T>(
  fn: (local: { id: Identity; store: NodeStore; names: Names }) => T,
): T {
  const id = loadIdentity(resolveKithHome())
  if (id.config.fleet === undefined)
    throw new KithError('not-initialized', 'this machine is in no fleet yet')
  const store = new NodeStore(id.home)
  try {
    const book = new GrantBook(store.events, id.config.fleet)
    return fn({ id, store, names: new Names(book.verifier, store.events) })
  } finally {
    store.close()
  }
}

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
