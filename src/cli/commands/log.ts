import { KithError } from '../../errors.js'
import { parseChannel } from '../../events/chat.js'
import { chatHistory, unknownChannelNote, type ChatItem } from '../../node/chat-store.js'
import { parseCount } from '../args.js'
import { declare } from '../declare.js'
import { parseSince } from '../duration.js'
import type { Out } from '../io.js'
import { formatChat, stdoutLayout } from './chat-common.js'
import { connectNode } from '../control-client.js'
import { withLocalNode } from '../local-node.js'
import { threadRootOf } from '../../node/session-threads.js'

export const logCommand = declare({
  name: 'log',
  summary: 'print messages (--follow, --json)',
  usage: ['kith log [#channel] [--thread ID] [--since T] [--limit N] [--follow] [--json]'],
  arity: { min: 0, max: 1, error: 'kith log takes at most one channel' },
  options: {
    since: {
      type: 'string',
      value: 'T',
      description: 'unix seconds, an ISO date, or a duration ago (15m, 2h, 7d)',
    },
    limit: { type: 'string', value: 'N', description: 'the newest N messages (default 50)' },
    follow: {
      type: 'boolean',
      short: 'f',
      description: 'keep printing new messages as they arrive (needs kith up)',
    },
    json: { type: 'boolean', description: 'one JSON object per line' },
    thread: {
      type: 'string',
      value: 'ID',
      description: "one thread (a session): its root message's id, or its first 8+ hex",
    },
  },
  about: `Prints chat messages this node has (sent or received), oldest first: the newest N (default 50).
--since takes unix seconds, an ISO date, or a duration ago (15m, 2h, 7d). --follow keeps
printing new messages as they arrive (needs kith up running). --json prints one JSON object per
line: id, created_at, channel, from {pubkey, name, role}, content, tags. A channel with nothing
to print says so on stderr; one nobody ever posted in exits 5 (not found), with the nearest
channel names. --thread shows one thread: the message that began it and the replies in it (an
agent's session; see kith session list).`,
})

/** Whether `event` began the thread `id` (a prefix) or is in it. */
function inThread(event: ChatItem['event'], id: string): boolean {
  return event.id.startsWith(id) || (threadRootOf(event)?.startsWith(id) ?? false)
}

export async function runLog(argv: string[], out: Out): Promise<number> {
  const parsed = logCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  const channel = positionals[0] === undefined ? undefined : parseChannel(positionals[0])
  const params = {
    ...(channel === undefined ? {} : { channel }),
    ...(values.since === undefined ? {} : { since: parseSince(values.since) }),
    // A thread is picked out of the channel's recent messages: read more of them.
    limit: parseCount('--limit', values.limit, values.thread === undefined ? 50 : 5000),
  }
  const thread = values.thread?.toLowerCase()
  if (thread !== undefined && !/^[0-9a-f]{8,64}$/.test(thread))
    throw new KithError('usage', '--thread takes a message id (8 to 64 hex)')
  const print = (item: ChatItem) => {
    if (thread !== undefined && !inThread(item.event, thread)) return
    if (values.json) {
      out.line(
        JSON.stringify({
          id: item.event.id,
          created_at: item.event.created_at,
          channel: item.channel ?? null,
          from: { pubkey: item.from.pubkey, name: item.from.name, role: item.from.role },
          content: item.event.content,
          tags: item.event.tags,
        }),
      )
    } else out.line(formatChat(item, { channel: channel === undefined, ...stdoutLayout() }))
  }
  // Nothing printed is said, never a silent exit 0: an empty channel, or one nobody ever posted
  // in (a typo: exit 5, with the nearest names).
  const note = withLocalNode(({ store, names }) => {
    const items = chatHistory(store, names, params)
    for (const item of items) print(item)
    if (items.length > 0 || channel === undefined) return undefined
    const known = store.channels()
    if (known.some((c) => c.name === channel && c.messages > 0))
      return {
        known: true,
        text: `no messages in #${channel}${values.since === undefined ? '' : ` since ${values.since}`}`,
      }
    if (known.some((c) => c.name === channel))
      return { known: true, text: `no messages in #${channel} yet` }
    return {
      known: false,
      text: unknownChannelNote(
        channel,
        known.map((c) => c.name),
      ),
    }
  })
  if (note !== undefined && !note.known && !values.follow)
    throw new KithError('not-found', note.text)
  if (note !== undefined) out.err(values.follow ? `${note.text}; following it` : note.text)
  if (!values.follow) return 0
  const daemon = await connectNode()
  if (daemon === undefined)
    throw new KithError('io', '--follow needs the node running: start kith up')
  daemon.on('chat', print)
  await daemon.request('subscribe', channel === undefined ? {} : { channel })
  await daemon.untilClosedOrStopped()
  return 0
}

/** What the command index loads. */
export { logCommand as command, runLog as run }
