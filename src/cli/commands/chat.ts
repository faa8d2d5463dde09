import { createInterface, clearLine, cursorTo, moveCursor, type Interface } from 'node:readline'
import { endsTurn, parseChannel, threadOf } from '../../events/chat.js'
import { optionFor, type AnswerWord } from '../../events/permission-options.js'
import type { OpenCard } from '../../node/permission-cards.js'
import { unknownChannelNote, type ChatItem } from '../../node/chat-store.js'
import type { WatchFrame } from '../../node/observer-frames.js'
import type { ControlClient } from '../control-client.js'
import { declare } from '../declare.js'
import { MessageDraft, pasteEnd, pasteStart } from '../chat-input.js'
import type { Out } from '../io.js'
import { describeUpdate, type Update } from '../transcript.js'
import { formatChat, permissionContent, previewLines, stdoutLayout } from './chat-common.js'
import { wrap } from '../terminal-text.js'
import { connectNode, requireNode } from '../control-client.js'
import { resolveKithHome } from '../../identity/home.js'
import { loadIdentity } from '../../identity/keys.js'
import { whoIsIn } from './chat-who.js'

/** How often a chat with turns under way asks whether their hosts are still up. */
const hostCheckMs = 2000
/** How often a chat whose node stopped looks for it again. */
const reattachMs = 1000

type Option = { optionId: string; name: string; kind?: string }

export const chatCommand = declare({
  name: 'chat',
  summary: 'interactive chat through the running node',
  usage: ['kith chat [#channel]'],
  arity: { min: 0, max: 1, error: 'kith chat takes at most one channel' },
  options: {},
  about: `Interactive chat in a channel (default #general) through the running node (kith up): recent
history, then live messages with each author's name and role; type a line to send it. Agents'
answers are laid out for the terminal (wrapped, lists and code set off), each with what it
answers; while an agent works, a line says so and its tool calls show as progress. A turn whose
host machine goes offline (kith-chat/1 presence) is said so and no longer counted; a turn of an
agent removed from the fleet is over. When the node stops (a restart), chat stays, says so, and
reattaches once it is back, showing what came meanwhile.
  Multi-line messages: paste them (a paste is one message: Enter sends it), or end a line
  with \\ to go on in the next one.
  /join #other   switch channel      /who       who is in this channel
  /cards         the permission cards still open here, numbered
  /allow [CARD] [OPTION]   answer a card with its "allow once" option, or option number
                 OPTION; CARD is its number ([card N]), its request id, or @agent (its one open
                 card); without CARD, the one card open here. /reject [CARD] rejects it;
                 /always [CARD] answers "always allow" (its like then runs without asking).
                 The answer names the card it answered; when several could be meant, it asks.
  /cancel [name] cancel the turn of the agents (or one agent) working in this channel
  /interrupt @agent TEXT   stop the agent's turn here and run TEXT next
  /drop          discard the lines gathered for a multi-line message
  /quit          leave (or Ctrl-D)    /help      this list
Ctrl-C clears the line being typed; on an empty line it leaves. A permission card, or a message
that mentions you, rings the terminal bell.
Plain terminal output: works inside tmux and over SSH (NO_COLOR turns colors off).`,
})

interface Card {
  id: string
  agent: string
  title: string
  options: Option[]
  channel: string | undefined
}

/** An agent turn under way, as the observer frames tell it (for the "working" line). */
interface Turn {
  agent: string
  /** The agent's key, to ask the node whether its host is still up. */
  agentKey: string
  since: number
  /** Its host went offline (by name): the turn cannot go on there, so it is not counted. */
  hostOffline?: string
  thinking: boolean
  /** A card of this turn is waiting for a person. */
  waiting: boolean
}

export async function runChat(argv: string[], out: Out): Promise<number> {
  const parsed = chatCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { positionals } = parsed
  let channel = parseChannel(positionals[0] ?? '#general')
  const daemon = await requireNode(
    'kith chat needs the node running: start kith up (in another terminal or tmux pane)',
  )
  const tty = process.stdin.isTTY === true && process.stdout.isTTY === true
  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: tty })
  const id = loadIdentity(resolveKithHome())
  const mine = new Set([id.devicePubkey, ...(id.ownerPubkey === undefined ? [] : [id.ownerPubkey])])
  const chat = new ChatRun(daemon, rl, out, tty, () => channel, mine)
  chat.onJoin = (name) => (channel = name)
  return chat.run()
}

/** One `kith chat`: what it shows, the cards it numbered, the turns under way, the draft. */
class ChatRun {
  /** Set by runChat: /join changes the channel it reads. */
  onJoin: (channel: string) => void = () => undefined
  /** Cards are numbered as they are shown, once per `kith chat` (across /join). */
  private readonly cards = new Map<number, Card>()
  private readonly cardOf = new Map<string, number>()
  /** Channels whose cards sealed before this device joined were already counted here. */
  private readonly sealedSaid = new Set<string>()
  private readonly turns = new Map<string, Turn>()
  /** Tool calls already shown, by prompt and toolCallId, with the status last shown. */
  private readonly tools = new Map<string, { title: string; status: string }>()
  private readonly draft = new MessageDraft()
  /** The terminal says a bracketed paste is under way (readline reports its markers as keys). */
  private pasting = false
  private ticker: NodeJS.Timeout | undefined
  /** While turns are under way: asks the node now and then whether their hosts are still up. */
  private hostWatch: NodeJS.Timeout | undefined

  constructor(
    /** The node's control socket; replaced when the node restarts and chat reattaches. */
    private daemon: ControlClient,
    private readonly rl: Interface,
    private readonly out: Out,
    private readonly tty: boolean,
    private readonly channel: () => string,
    /** This device's key and its owner's: a message that mentions one of them rings. */
    private readonly mine: ReadonlySet<string>,
  ) {}

  /**
   * The terminal bell for what needs this person: a permission card, or a message that mentions
   * them (a p tag naming this device or its owner), not one of their own.
   */
  private ring(item: ChatItem): void {
    if (!this.tty || this.mine.has(item.event.pubkey)) return
    const card = item.event.kind === 4142
    const mention = item.event.tags.some((t) => t[0] === 'p' && this.mine.has(t[1] ?? ''))
    if (card || mention) process.stdout.write('\u0007')
  }

  /**
   * Ctrl-C: with something typed (or lines gathered for a multi-line message), clears it, as a
   * shell does; on an empty line it leaves.
   */
  private interrupt(): boolean {
    const typed = this.rl.line !== '' || this.draft.waiting > 0
    if (!typed) return false
    this.draft.clear()
    this.rl.write(null, { ctrl: true, name: 'e' })
    this.rl.write(null, { ctrl: true, name: 'u' })
    this.prompt()
    return true
  }

  private prompt(): void {
    const working = [...this.turns.values()].filter((t) => t.agent !== '')
    const status =
      working.length === 0
        ? ''
        : ` (${working
            .map((t) =>
              t.hostOffline !== undefined
                ? `${t.agent}: host offline`
                : `${t.agent} ${t.waiting ? 'waiting for you' : t.thinking ? 'thinking' : 'working'} ${Math.round((Date.now() - t.since) / 1000)}s`,
            )
            .join(', ')})`
    const more = this.draft.waiting > 0 ? '… ' : '> '
    this.rl.setPrompt(`#${this.channel()}${status}${more}`)
    if (this.tty) this.rl.prompt(true)
  }

  /** Incoming lines are printed above the input line, which is then redrawn as it was. */
  private show(text: string): void {
    if (this.tty) {
      clearLine(process.stdout, 0)
      cursorTo(process.stdout, 0)
    }
    this.out.line(text)
    if (this.tty) this.prompt()
  }

  private render(item: ChatItem): string {
    const layout = stdoutLayout()
    if (item.event.kind === 4143)
      return formatChat(item, {
        ...layout,
        answered: (request) => {
          const n = this.cardOf.get(request)
          const card = n === undefined ? undefined : this.cards.get(n)
          return card === undefined || n === undefined ? undefined : { card: n, ...card }
        },
      })
    if (item.event.kind !== 4142) return formatChat(item, layout)
    // The turn that asked now waits for a person.
    const turn = this.turns.get(threadOf(item.event).root ?? '')
    if (turn !== undefined) turn.waiting = true
    return formatChat(item, { ...layout, card: this.number(item) })
  }

  /** A line of this chat's own (not a message): wrapped to the terminal, hanging by 2. */
  private note(text: string): void {
    const width = stdoutLayout().width
    this.show(width === undefined ? text : wrap(text, width, 2).join('\n'))
  }

  /** The number of a card (4142), given when it is first shown. */
  private number(item: ChatItem | { id: string; open: OpenCard }): number {
    const id = 'open' in item ? item.id : item.event.id
    let n = this.cardOf.get(id)
    if (n !== undefined) return n
    n = this.cards.size + 1
    this.cardOf.set(id, n)
    if ('open' in item) {
      const { agent, title, options, channel } = item.open
      this.cards.set(n, { id, agent, title, options, channel })
    } else {
      const p = permissionContent(item)
      this.cards.set(n, {
        id,
        agent: item.from.name,
        title: p.title ?? '?',
        options: p.options ?? [],
        channel: item.channel,
      })
    }
    return n
  }

  private async enter(name: string): Promise<void> {
    this.onJoin(name)
    const history = await this.daemon.request('history', { channel: name, limit: 20 })
    let note = ''
    if (history.length === 0) {
      const known = await this.daemon.request('channels')
      note = known.some((c) => c.name === name)
        ? ' (no messages yet)'
        : ` new channel: ${unknownChannelNote(
            name,
            known.map((c) => c.name),
          )}`
    }
    this.show(`── #${name} ──${note}`)
    for (const item of history) this.showItem(item)
    this.prompt()
  }

  /** Messages already on screen: a reattach shows only what came while the node was away. */
  private readonly shownIds = new Set<string>()
  /** Cards this chat is answering right now (their ids): the node's echo is not shown again. */
  private readonly answering = new Set<string>()

  private ownAnswer(event: { kind: number; tags: string[][] }): boolean {
    if (event.kind !== 4143) return false
    const request = event.tags.find((t) => t[0] === 'e')?.[1]
    return request !== undefined && this.answering.has(request)
  }

  private showItem(item: ChatItem): void {
    this.shownIds.add(item.event.id)
    this.show(this.render(item))
  }

  /** The cards still open in this channel, as the node knows them, each with its number. */
  private async openCards(agent?: string): Promise<{ n: number; card: OpenCard }[]> {
    const open = await this.daemon.request('cards', {
      channel: this.channel(),
      ...(agent === undefined ? {} : { agent }),
    })
    // In the order of their numbers, whatever order the node keeps them in (two cards of one
    // second have no order of their own).
    return open
      .map((card) => ({ n: this.number({ id: card.id, open: card }), card }))
      .sort((a, b) => a.n - b.n)
  }

  /**
   * Once per channel: how many of its cards this device holds sealed under keys it never had
   * (they were made before it joined); they are not open for it, and no /allow means them.
   */
  private async sealedNote(): Promise<void> {
    const channel = this.channel()
    if (this.sealedSaid.has(channel)) return
    this.sealedSaid.add(channel)
    const { count } = await this.daemon.request('cards-sealed', { channel })
    if (count > 0)
      this.show(
        `${count} earlier card${count === 1 ? '' : 's'} sealed before this device joined (it never had their keys): not shown, and not open for it`,
      )
  }

  private async listCards(): Promise<void> {
    const open = await this.openCards()
    await this.sealedNote()
    if (open.length === 0) {
      this.show(`no open permission cards in #${this.channel()}`)
      return
    }
    for (const { n, card } of open) {
      this.show(
        `[card ${n}] ${card.agent}: ${card.title} (${card.toolKind})${card.sensitive === null ? '' : `  ⚠ ${card.sensitive}`}  ${card.options.map((o, i) => `[${i + 1}] ${o.name}`).join('  ')}`,
      )
      // The tally, as kith permit shows it: a card that waits for other people says so.
      if (card.quorum !== null)
        this.show(
          `  👥 needs ${card.quorum.n} people: ${card.quorum.text}${card.quorum.allowedBy.length === 0 ? '' : ` (allowed by ${card.quorum.allowedBy.join(', ')}${card.quorum.mine ? ': you' : ''})`}`,
        )
      for (const l of previewLines(card.preview, { indent: 2 })) this.show(l)
    }
    this.show('answer with /allow N [OPTION], /always N or /reject N')
  }

  /**
   * /allow [CARD] [OPTION], /reject [CARD]: the card named (by number, request id or @agent), or
   * the one open here; says which card it answered, asks when several could be meant.
   */
  private async answer(line: string): Promise<void> {
    const m = /^\/(allow|always|reject)(?:\s+(\S+))?(?:\s+(\S+))?\s*$/.exec(line)
    if (m === null) {
      this.show(
        'usage: /allow [CARD] [OPTION], /always [CARD] or /reject [CARD] (CARD: N, a request id, or @agent)',
      )
      return
    }
    const verb = m[1] as AnswerWord
    let target = m[2]
    const optionText = m[3]
    // "/allow 2" with one card open and no card 2: still card 2 (numbers name cards).
    let n: number | undefined
    if (target !== undefined && /^\d{1,3}$/.test(target)) n = Number(target)
    else if (target !== undefined && /^[0-9a-f]{4,64}$/i.test(target)) {
      const known = [...this.cards].find(([, c]) => c.id.startsWith(target!.toLowerCase()))
      if (known !== undefined) n = known[0]
      else {
        const open = (await this.openCards()).find((o) => o.card.id.startsWith(target!))
        if (open === undefined) {
          this.show(`no card with request id ${target} here (/cards lists the open ones)`)
          return
        }
        n = open.n
      }
    } else {
      // @agent, or nothing: the one open card (of that agent) in this channel.
      const agent = target?.startsWith('@') ? target : undefined
      if (target !== undefined && agent === undefined) {
        this.show(`${target} names no card: give its number ([card N]), its request id, or @agent`)
        return
      }
      let open: { n: number; card: OpenCard }[]
      try {
        open = await this.openCards(agent)
      } catch (err) {
        this.note(`⚠ ${err instanceof Error ? err.message : String(err)}`)
        return
      }
      if (open.length === 0) {
        await this.sealedNote()
        this.show(
          `no open card${agent === undefined ? '' : ` of ${agent}`} in #${this.channel()} to ${verb}`,
        )
        return
      }
      if (open.length > 1) {
        this.show(
          `${open.length} cards are open${agent === undefined ? '' : ` for ${agent}`}: ${open.map((o) => `[card ${o.n}] ${o.card.agent}: ${o.card.title}`).join(', ')}; which one? /${verb} N`,
        )
        return
      }
      n = open[0]!.n
      target = String(n)
    }
    const card = this.cards.get(n)
    if (card === undefined) {
      this.show(`no card ${n} here: cards are numbered as this chat shows them ([card N]; /cards)`)
      return
    }
    const option =
      optionText !== undefined
        ? /^\d+$/.test(optionText)
          ? card.options[Number(optionText) - 1]
          : card.options.find((o) => o.optionId === optionText)
        : optionFor(
            card.options.map((o) => ({ ...o, kind: o.kind ?? '' })),
            verb,
          )
    if (option === undefined) {
      this.show(
        `card ${n} has no such option; its options: ${card.options.map((o, i) => `${i + 1} ${o.name}`).join(', ')} (/allow ${n} OPTION)`,
      )
      return
    }
    // The node shows the signed answer to every chat as it sends it, usually before it replies
    // here: this chat says it once, below, in its own words (one line for one answer).
    this.answering.add(card.id)
    try {
      const sent = await this.daemon.request('decide', {
        request: card.id,
        option: option.optionId,
      })
      this.shownIds.add(sent.event.id)
    } catch (err) {
      this.note(`⚠ card ${n} not answered: ${err instanceof Error ? err.message : String(err)}`)
      return
    } finally {
      this.answering.delete(card.id)
    }
    this.show(`answered card ${n} (${card.agent}: ${card.title}) with ${option.name}`)
  }

  private async send(message: { text: string; interrupt?: boolean }): Promise<void> {
    const r = await this.daemon.request('send', { channel: this.channel(), ...message })
    const d = r.deliveries[0]
    if (d && !d.ok) this.show(`⚠ not delivered: ${d.hub} refused it: ${d.message}`)
    else if (!d) this.show('… queued: no hub answered yet; the node keeps trying')
  }

  private async handle(input: { text: string; multiline: boolean }): Promise<boolean> {
    const line = input.text.trim()
    if (line === '') return true
    if (input.multiline) {
      await this.send({ text: input.text })
    } else if (line === '/quit' || line === '/exit') return false
    else if (line === '/help') this.show(chatCommand.help())
    else if (line === '/who') {
      const { devices } = await this.daemon.request('status')
      for (const l of await whoIsIn(this.channel(), devices ?? [])) this.show(l)
    } else if (line === '/cards') await this.listCards()
    else if (line === '/join' || line.startsWith('/join '))
      await this.enter(parseChannel(line.slice(5).trim() || '#general'))
    else if (line === '/cancel' || line.startsWith('/cancel ')) {
      const agent = line.slice(7).trim().replace(/^@/, '')
      const r = await this.daemon.request('cancel', {
        channel: this.channel(),
        ...(agent ? { agent } : {}),
      })
      this.note(
        `cancel sent${agent ? ` to @${agent}` : ''} (for ${r.prompts} open prompt${r.prompts === 1 ? '' : 's'})${r.warning === undefined ? '' : `; ${r.warning}`}`,
      )
    } else if (line.startsWith('/interrupt')) {
      const text = line.slice(10).trim()
      if (text === '')
        this.show('usage: /interrupt @agent TEXT (stops its turn here and runs this next)')
      else await this.send({ text, interrupt: true })
    } else if (/^\/(allow|always|reject)(\s|$)/.test(line)) await this.answer(line)
    else if (line.startsWith('/'))
      this.show(`unknown command ${line.split(' ')[0]}; /help lists them`)
    else await this.send({ text: input.text.trim() })
    this.prompt()
    return true
  }

  /** Observer frames: a "working" line as a turn starts, thinking, and each tool call once. */
  private frame(frame: WatchFrame): void {
    if (frame.channel !== this.channel()) return
    const key = frame.prompt
    for (const u of frame.updates as Update[]) {
      const kind = u.sessionUpdate ?? ''
      if (kind === 'kith_turn') {
        if (u.state === 'started') {
          this.turns.set(key, {
            agent: frame.agent.name,
            agentKey: frame.agent.pubkey,
            since: Date.now(),
            thinking: false,
            waiting: false,
          })
          this.show(`  ⋯ ${frame.agent.name} is working on it…`)
        } else this.turns.delete(key)
        this.tick()
        continue
      }
      if (kind === 'agent_thought_chunk') {
        const turn = this.turns.get(key)
        if (turn !== undefined && !turn.thinking) {
          turn.thinking = true
          this.show(`  ⋯ ${frame.agent.name} is thinking…`)
        }
        continue
      }
      if (kind === 'agent_message_chunk') {
        const turn = this.turns.get(key)
        if (turn !== undefined) turn.thinking = false
        continue
      }
      if (kind === 'tool_call' || kind === 'tool_call_update') {
        const turn = this.turns.get(key)
        if (turn !== undefined && kind === 'tool_call_update') turn.waiting = false
        const id = `${key}:${u.toolCallId ?? ''}`
        const seen = this.tools.get(id)
        const title = u.title ?? seen?.title ?? u.toolCallId ?? 'tool'
        const status = u.status ?? seen?.status ?? 'pending'
        // One line when a call starts, one when it ends: not one per update of it.
        const ended = status === 'completed' || status === 'failed'
        if (seen !== undefined && (seen.status === status || !ended)) {
          this.tools.set(id, { title, status: seen.status })
          continue
        }
        this.tools.set(id, { title, status })
        const line =
          seen === undefined
            ? describeUpdate({ ...u, sessionUpdate: 'tool_call', title, status })
            : describeUpdate({ ...u, sessionUpdate: 'tool_call_update', title, status })
        if (line !== undefined) this.show(`  ⋯ ${frame.agent.name}: ${line}`)
        continue
      }
      if (kind === 'kith_auto_allowed' || kind === 'plan') {
        const line = describeUpdate(u)
        if (line !== undefined) this.show(`  ⋯ ${frame.agent.name}: ${line}`)
      }
    }
  }

  /**
   * A turn whose host went away (it said offline, or fell silent: kith-chat/1, Presence) is
   * never going to answer here: it is said once, and the prompt line stops counting it. A
   * turn of an agent removed from the fleet is over: nothing it says would be taken.
   */
  private async checkHosts(): Promise<void> {
    const agents = [...new Set([...this.turns.values()].map((t) => t.agentKey))]
    if (agents.length === 0) return
    const hosts = await this.daemon.request('hosts', { agents })
    let changed = false
    for (const [key, turn] of this.turns) {
      const h = hosts.find((x) => x.agent === turn.agentKey)
      if (h === undefined) continue
      if (!h.member) {
        this.turns.delete(key)
        this.note(`  ✗ ${turn.agent} was removed from the fleet: its turn is over`)
        changed = true
      } else if (h.status === 'offline' && turn.hostOffline === undefined) {
        turn.hostOffline = h.host ?? '?'
        this.note(
          `  ⚠ ${turn.agent}'s host ${turn.hostOffline} went offline: its turn cannot finish until that machine is back`,
        )
        changed = true
      } else if (h.status === 'online' && turn.hostOffline !== undefined) {
        this.note(`  ⋯ ${turn.hostOffline} is back online (${turn.agent})`)
        delete turn.hostOffline
        changed = true
      }
    }
    if (changed) this.tick()
  }

  /** On a terminal, the prompt line counts the seconds an agent has been working. */
  private tick(): void {
    if (this.turns.size === 0) {
      clearInterval(this.hostWatch)
      this.hostWatch = undefined
    } else if (this.hostWatch === undefined) {
      this.hostWatch = setInterval(() => {
        this.checkHosts().catch((err: unknown) => {
          this.note(`⚠ ${err instanceof Error ? err.message : String(err)}`)
        })
      }, hostCheckMs)
      this.hostWatch.unref()
    }
    if (!this.tty) return
    if (this.turns.size === 0) {
      clearInterval(this.ticker)
      this.ticker = undefined
      this.prompt()
      return
    }
    this.ticker ??= setInterval(() => this.prompt(), 1000)
    this.ticker.unref()
  }

  /** A pending look for the node after it stopped. */
  private retry: NodeJS.Timeout | undefined

  /** Subscribes to the node's chat and frames, then shows the channel (again, on a reattach). */
  private async start(again: boolean): Promise<void> {
    await this.daemon.request('subscribe', {})
    await this.daemon.request('watch', {})
    if (!again) return this.enter(this.channel())
    // Only what came while the node was away: the rest is on screen already.
    const history = await this.daemon.request('history', {
      channel: this.channel(),
      limit: 20,
    })
    this.show(`── reattached to the node (#${this.channel()}) ──`)
    for (const item of history) if (!this.shownIds.has(item.event.id)) this.showItem(item)
    this.prompt()
  }

  /**
   * Listens to the node; when it stops (a restart, a service manager bringing it back), chat
   * stays, says so, and reattaches once the node's socket answers again. Ctrl-D or /quit leaves.
   */
  private attach(enqueue: (step: () => Promise<boolean>) => void, finished: () => boolean): void {
    const daemon = this.daemon
    daemon.on('close', () => {
      if (finished() || daemon !== this.daemon) return
      // Turns under way are the old node's: whatever the new one does, it tells afresh.
      this.turns.clear()
      this.tick()
      this.show('the node stopped; waiting for it to come back (Ctrl-D or /quit leaves)')
      const look = () => {
        this.retry = undefined
        if (finished()) return
        connectNode().then(
          (client) => {
            if (client === undefined || finished()) {
              client?.close()
              this.retry = setTimeout(look, reattachMs)
              return
            }
            this.daemon = client
            this.attach(enqueue, finished)
            enqueue(async () => {
              await this.start(true)
              return true
            })
          },
          (err: unknown) => {
            this.note(`⚠ ${err instanceof Error ? err.message : String(err)}`)
            this.retry = setTimeout(look, reattachMs)
          },
        )
      }
      this.retry = setTimeout(look, reattachMs)
    })
    daemon.on('chat', (item) => {
      if (item.channel !== this.channel()) return
      // An answered card: its turn no longer waits for a person.
      if (item.event.kind === 4143) for (const t of this.turns.values()) t.waiting = false
      // A turn that answered is over, whatever frames were lost; a notice answers nothing (a
      // quorum card's "1 of 2" tally, a refused answer to a card: the turn still waits) unless
      // its outcome says how the turn ended (events/chat.ts endsTurn).
      if (item.event.kind === 9 && endsTurn(item.event)) {
        const answered = threadOf(item.event).parent
        if (answered !== undefined && this.turns.has(answered)) {
          this.turns.delete(answered)
          this.tick()
        }
      }
      // This chat's own answer: said once, when the node confirms it (see the /allow handling).
      if (this.shownIds.has(item.event.id) || this.ownAnswer(item.event)) return
      this.showItem(item)
      this.ring(item)
    })
    daemon.on('frame', (frame) => this.frame(frame))
  }

  async run(): Promise<number> {
    const { rl, tty } = this
    // Bracketed paste: a pasted block arrives marked, so it becomes one message.
    if (tty) {
      process.stdout.write('\u001b[?2004h')
      process.stdin.on('keypress', (_s: unknown, key: { name?: string } | undefined) => {
        if (key?.name === 'paste-start') this.pasting = true
        else if (key?.name === 'paste-end') {
          this.pasting = false
          if (this.draft.waiting > 0)
            this.show(
              `  (${this.draft.waiting} pasted line${this.draft.waiting === 1 ? '' : 's'} gathered: Enter sends them as one message, /drop discards them)`,
            )
        }
      })
    }
    await new Promise<void>((resolve) => {
      let finished = false
      const done = () => {
        if (finished) return
        finished = true
        clearInterval(this.ticker)
        clearInterval(this.hostWatch)
        // Leave on a line of its own, so the shell's prompt is not glued to the chat's.
        if (tty) process.stdout.write('\u001b[?2004l\n')
        rl.close()
        clearTimeout(this.retry)
        this.daemon.close()
        resolve()
      }
      // Lines are handled strictly in order (a /join must finish before the next message), and
      // input that arrives while history loads waits its turn instead of being lost.
      let queue = Promise.resolve(true)
      const enqueue = (step: () => Promise<boolean>) => {
        queue = queue
          .then((go) => (go ? step() : false))
          .catch((err: unknown) => {
            this.note(`⚠ ${err instanceof Error ? err.message : String(err)}`)
            this.prompt()
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
        if (input.trim() === '/drop' && this.draft.waiting > 0) {
          const n = this.draft.clear()
          this.show(`dropped ${n} gathered line${n === 1 ? '' : 's'}`)
          return
        }
        const step = this.draft.line(input, this.pasting)
        if (step.send === undefined) {
          // Part of a message still being written: shown, sent with the rest.
          if (step.waiting > 0) {
            this.show(
              `  │ ${input.split(pasteStart).join('').split(pasteEnd).join('').replace(/\\$/, '')}`,
            )
          }
          this.prompt()
          return
        }
        const text = step.send
        enqueue(() => this.handle({ text, multiline: text.includes('\n') }))
      })
      rl.on('close', () => enqueue(() => Promise.resolve(false)))
      rl.on('SIGINT', () => {
        if (!this.interrupt()) rl.close()
      })
      this.attach(enqueue, () => finished)
      enqueue(async () => {
        await this.start(false)
        return true
      })
    })
    return 0
  }
}

/** What the command index loads. */
export { chatCommand as command, runChat as run }
