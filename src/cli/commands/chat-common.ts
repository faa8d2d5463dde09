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
    return fn({ id, store, names: new Names(book.verifier, store.events, id.devicePubkey) })
  } finally {
    store.close()
  }
}

export function connectDaemon(): Promise<ControlClient | undefined> {
  return ControlClient.connect(join(resolveKithHome(), controlSocketFile))
}

const time = (s: number) => new Date(s * 1000).toISOString().slice(11, 16)

interface PermissionContent {
  title?: string
  toolKind?: string
  options?: { optionId: string; name: string; kind?: string }[]
  sensitive?: string
}

/** A permission request's content as far as it can be read (nothing when it cannot). */
export function permissionContent(item: ChatItem): PermissionContent {
  return parseJson<PermissionContent>(item.event.content) ?? {}
}

function parseJson<T>(text: string): T | undefined {
  try {
    return JSON.parse(text) as T
  } catch {
    // Not ours to render: shown as it is.
    return undefined
  }
}

/**
 * The author as shown: a person as a person; a device or agent always with the person it belongs
 * to (unless that is this node's own person), so no name passes for another person's.
 */
export function authorLabel(from: ChatItem['from']): string {
  if (from.role === 'agent')
    return `${from.name} [agent, authorized by ${from.authorizedBy ?? '?'}]`
  if (from.role === 'device')
    return from.mine ? `${from.name} [device]` : `${from.name} [device of ${from.person ?? '?'}]`
  if (from.role === 'unknown') return from.name
  return `${from.name} [${from.role}]`
}

/**
 * One line for a chat message, a permission card (4142) or a decision (4143). `card`: the
 * number `kith chat` gave the card, which `/allow N` names.
 */
export function formatChat(
  item: ChatItem,
  opts: { channel?: boolean; card?: number } = {},
): string {
  const from = item.from
  const channel = opts.channel && item.channel ? `#${item.channel} ` : ''
  const head = `${time(item.event.created_at)} ${channel}`
  if (item.event.kind === 4142) {
    const p = permissionContent(item)
    const options = (p.options ?? []).map((o, i) => `[${i + 1}] ${o.name}`).join('  ')
    const id = item.event.id.slice(0, 8)
    const card = opts.card === undefined ? '' : `[card ${opts.card}] `
    const answer =
      opts.card === undefined
        ? `→ kith permit ${id} OPTION`
        : `→ /allow ${opts.card} (or /allow ${opts.card} OPTION, /reject ${opts.card})`
    const sensitive = p.sensitive === undefined ? '' : `  ⚠ ${p.sensitive}`
    return `${head}🔐 ${card}${from.name} asks to run: ${p.title ?? '?'} (${p.toolKind ?? 'tool'})${sensitive}  ${options}  ${answer}  (request ${id})`
  }
  if (item.event.kind === 4143) {
    const d = parseJson<{ optionId?: string }>(item.event.content) ?? {}
    const request = item.event.tags.find((t) => t[0] === 'e')?.[1] ?? '?'
    return `${head}✔ ${from.name} decided ${d.optionId ?? '?'} on request ${request.slice(0, 8)}`
  }
  const reply = item.event.tags.some((t) => t[0] === 'e') ? '↳ ' : ''
  return `${head}${authorLabel(from)}: ${reply}${item.event.content}`
}
