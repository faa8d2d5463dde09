import { createInterface } from 'node:readline'
import { clearLine, cursorTo, moveCursor } from 'node:readline'
import { KithError } from '../../errors.js'
import { parseChannel } from '../../events/chat.js'
import type { ChatItem, WatchFrame } from '../../node/daemon.js'
import { describeUpdate } from './watch.js'
import { parseCommandArgs } from '../args.js'
import type { Out } from '../io.js'
import { connectDaemon, formatChat, permissionContent } from './chat-common.js'

type Option = { optionId: string; name: string; kind?: string }

export const chatHelp = `Usage: kith chat [#channel]

Interactive chat in a channel (default #general) through the running node (kith up): recent
history, then live messages with each author's name and role; type a line to send it.
  /join #other   switch channel      /who       what this is
  /allow N [OPTION]  answer permission card N (the number on the card: [card N]) with its
                 "allow once" option, or with option number OPTION; /reject N rejects it
  /cancel [name] cancel the turn of the agents (or one agent) working in this channel
  /interrupt @agent TEXT   stop the agent's turn here and run TEXT next
  /quit          leave (or Ctrl-D)    /help      this list
Plain terminal output: works inside tmux and over SSH.`

export async function runChat(argv: string[], out: Out): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    argv,
    { help: { type: 'boolean', short: 'h' } },
    chatHelp,
  )
  if (values.help) {
    out.line(chatHelp)
    return 0
  }
  let channel = parseChannel(positionals[0] ?? '#general')
  const daemon = await connectDaemon()
  if (daemon === undefined) {
    throw new KithError(
      'io',
      'kith chat needs the node running: start kith up (in another terminal or tmux pane)',
    )
  }
  const tty = process.stdin.isTTY === true
  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: tty })
  const prompt = () => {
    rl.setPrompt(`#${channel}> `)
    if (tty) rl.prompt(true)
  }
  // Incoming lines are printed above the input line, which is then redrawn as it was.
  const show = (line: string) => {
    if (tty) {
      clearLine(process.stdout, 0)
      cursorTo(process.stdout, 0)
    }
    out.line(line)
    if (tty) rl.prompt(true)
  }
  // Permission cards are numbered as they are shown, once per chat session (across /join), so
  // /allow N answers the card that showed N and never another.
  const cards = new Map<number, { id: string; agent: string; title: string; options: Option[] }>()
  const cardOf = new Map<string, number>()
  const render = (item: ChatItem): string => {
    if (item.event.kind !== 4142) return formatChat(item)
    let n = cardOf.get(item.event.id)
    if (n === undefined) {
      n = cards.size + 1
      const p = permissionContent(item)
      cardOf.set(item.event.id, n)
      cards.set(n, {
        id: item.event.id,
        agent: item.from.name,
        title: p.title ?? '?',
        options: p.options ?? [],
      })
    }
    return formatChat(item, { card: n })
  }
  const enter = async (name: string) => {
    channel = name
    const history = await daemon.request<ChatItem[]>('history', { channel, limit: 20 })
    show(`── #${channel} ──${history.length === 0 ? ' (no messages yet)' : ''}`)
    for (const item of history) show(render(item))
    prompt()
  }
  /** /allow N [OPTION], /reject N: exactly card N, and says which card it answered. */
  const answer = async (line: string) => {
    const m = /^\/(allow|reject)\s+(\d+)(?:\s+(\d+))?$/.exec(line)
    if (m === null) {
      show('usage: /allow N [OPTION] or /reject N (N: the number on the card, [card N])')
      return
    }
    const n = Number(m[2])
    const card = cards.get(n)
    if (card === undefined) {
      show(`no card ${n} here: cards are numbered as this chat shows them ([card N])`)
      return
    }
    const option =
      m[3] !== undefined
        ? card.options[Number(m[3]) - 1]
        : m[1] === 'allow'
          ? (card.options.find((o) => o.kind === 'allow_once') ??
            card.options.find((o) => o.kind?.startsWith('allow')))
          : (card.options.find((o) => o.kind === 'reject_once') ??
            card.options.find((o) => o.kind?.startsWith('reject')))
    if (option === undefined) {
      show(
        `card ${n} has no such option; its options: ${card.options.map((o, i) => `${i + 1} ${o.name}`).join(', ')} (/allow ${n} OPTION)`,
      )
      return
    }
    try {
      await daemon.request('decide', { request: card.id, option: option.optionId })
    } catch (err) {
      show(`⚠ card ${n} not answered: ${err instanceof Error ? err.message : String(err)}`)
      return
    }
    show(`answered card ${n} (${card.agent}: ${card.title}) with ${option.name}`)
  }
  const send = async (message: { text: string; interrupt?: boolean }) => {
    const r = await daemon.request<{
      deliveries: { ok: boolean; hub: string; message: string }[]
    }>('send', { channel, ...message })
    const d = r.deliveries[0]
    if (d && !d.ok) show(`⚠ not delivered: ${d.hub} refused it: ${d.message}`)
    else if (!d) show('… queued: no hub answered yet; the node keeps trying')
  }
  const handle = async (line: string): Promise<boolean> => {
    if (line === '') return true
    if (line === '/quit' || line === '/exit') return false
    if (line === '/help') show(chatHelp)
    else if (line === '/who') show(`chatting in #${channel} through the local kith node`)
    else if (line.startsWith('/join')) await enter(parseChannel(line.slice(5).trim() || '#general'))
    else if (line === '/cancel' || line.startsWith('/cancel ')) {
      const agent = line.slice(7).trim().replace(/^@/, '')
      const r = await daemon.request<{ prompts: number }>('cancel', {
        channel,
        ...(agent ? { agent } : {}),
      })
      show(
        `cancel sent${agent ? ` to @${agent}` : ''} (for ${r.prompts} open prompt${r.prompts === 1 ? '' : 's'})`,
      )
    } else if (line.startsWith('/interrupt')) {
      const text = line.slice(10).trim()
      if (text === '')
        show('usage: /interrupt @agent TEXT (stops its turn here and runs this next)')
      else await send({ text, interrupt: true })
    } else if (line.startsWith('/allow') || line.startsWith('/reject')) await answer(line)
    else if (line.startsWith('/')) show(`unknown command ${line.split(' ')[0]}; /help lists them`)
    else await send({ text: line })
    prompt()
    return true
  }
  await new Promise<void>((resolve) => {
    let finished = false
    const done = () => {
      if (finished) return
      finished = true
      rl.close()
      daemon.close()
      resolve()
    }
    // Lines are handled strictly in order (a /join must finish before the next message), and
    // input that arrives while history loads waits its turn instead of being lost.
    let queue = Promise.resolve(true)
    const enqueue = (step: () => Promise<boolean>) => {
      queue = queue
        .then((go) => (go ? step() : false))
        .catch((err: unknown) => {
          show(`⚠ ${err instanceof Error ? err.message : String(err)}`)
          return true
        })
      queue.then((go) => (go ? undefined : done())).catch(() => done())
    }
    rl.on('line', (input) => {
      // The typed line is replaced by the message as the node echoes it, author and all.
      if (tty) {
        moveCursor(process.stdout, 0, -1)
        clearLine(process.stdout, 0)
      }
      enqueue(() => handle(input.trim()))
    })
    rl.on('close', () => enqueue(() => Promise.resolve(false)))
    daemon.on('close', () => {
      if (!finished) show('the node stopped; leaving chat')
      done()
    })
    daemon.on('chat', (p) => {
      const item = p as ChatItem
      if (item.channel !== channel) return
      show(render(item))
    })
    // Agents' tool calls show as a progress line while they work (observer frames).
    daemon.on('frame', (p) => {
      const frame = p as WatchFrame
      if (frame.channel !== channel) return
      for (const u of frame.updates as { sessionUpdate?: string }[]) {
        if (!['tool_call', 'tool_call_update', 'kith_auto_allowed'].includes(u.sessionUpdate ?? ''))
          continue
        const line = describeUpdate(u)
        if (line !== undefined) show(`  ⋯ ${frame.agent.name}: ${line}`)
      }
    })
    enqueue(async () => {
      await daemon.request('subscribe', {})
      await daemon.request('watch', {})
      await enter(channel)
      return true
    })
  })
  return 0
}
