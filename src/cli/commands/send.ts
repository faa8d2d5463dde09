import { KithError } from '../../errors.js'
import { parseChannel } from '../../events/chat.js'
import { didYouMean } from '../../events/did-you-mean.js'
import { buildChat, unknownChannelNote } from '../../node/chat-store.js'
import { E2eKeys } from '../../node/e2e-keys.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { connectNode } from '../control-client.js'
import { withLocalNode } from '../local-node.js'

export const sendCommand = declare({
  name: 'send',
  summary: 'post a message (queued in the outbox if the node is not running)',
  usage: ["kith send '#channel' 'text' [--reply ID] [--interrupt] [--new] [--json]"],
  arity: { min: 2, max: 2, error: 'kith send takes a channel and a text' },
  options: {
    reply: {
      type: 'string',
      value: 'ID',
      description:
        "answer the message with this id, or its first 8+ hex (a thread's id as kith session list shows it)",
    },
    interrupt: {
      type: 'boolean',
      description: "stop the @mentioned agents' turn here and take this message next",
    },
    new: {
      type: 'boolean',
      description: 'start this channel even though its name is close to one that exists',
    },
    json: { type: 'boolean', description: 'print the result as JSON' },
  },
  about: `Posts a chat message signed by this device. @names in the text (people, devices, agents) become
mentions: a name resolves among your own keys first, then to a person of that name, then to
another person's key only when one person has a key of that name; otherwise the message is
refused with the candidates, which you write as person/name (@bob/helper). With --interrupt,
the @mentioned agents stop the turn they are running in this channel, if it is one of the
prompts still open as this node knows them, and take this message next (it needs the agent's
approvers policy, as a cancel does, and is not acted on after 5 minutes; otherwise the message
waits its turn and the agent says why). --reply answers a message in its thread: a reply that
mentions an agent (@claude) continues that agent's session of the thread; one that mentions no
agent is a message to the people reading it, and no agent acts on it. A channel nobody has posted in whose name is close to one
that exists (#osp beside #ops) is refused with did-you-mean, as kith log and /join ask; --new
starts it all the same. Through the running node (kith up) it goes out at once
and this waits for the first hub's answer; with no node running it is written to the outbox in
node.db and the next kith up delivers it.`,
})

export async function runSend(argv: string[], out: Out): Promise<number> {
  const parsed = sendCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  const channel = parseChannel(positionals[0]!)
  const text = positionals[1]!
  if (values.reply !== undefined && !/^[0-9a-fA-F]{8,64}$/.test(values.reply)) {
    throw new KithError(
      'usage',
      "--reply takes a message id, or its first 8+ hex (kith session list shows each thread's)",
    )
  }
  const daemon = await connectNode()
  if (values.new !== true) {
    const known = (
      daemon !== undefined
        ? await daemon.request('channels')
        : withLocalNode(({ store }) => store.channels())
    ).map((c) => c.name)
    // A typo would start a channel nobody reads: refused when it is near one that exists.
    if (!known.includes(channel) && didYouMean(channel, known).length > 0) {
      daemon?.close()
      throw new KithError(
        'not-found',
        `${unknownChannelNote(channel, known)} (kith send --new '#${channel}' … starts it)`,
      )
    }
  }
  if (daemon !== undefined) {
    try {
      const r = await daemon.request('send', {
        channel,
        text,
        ...(values.reply ? { reply: values.reply } : {}),
        ...(values.interrupt ? { interrupt: true } : {}),
      })
      const d = r.deliveries[0]
      if (values.json) out.json({ id: r.event.id, queued: d === undefined, delivery: d ?? null })
      else if (d === undefined)
        out.line(`queued ${r.event.id.slice(0, 12)}… (no hub answered yet; the node keeps trying)`)
      else if (d.ok) out.line(`sent ${r.event.id.slice(0, 12)}… to #${channel} (${d.hub})`)
      else out.line(`refused by ${d.hub}: ${d.message}`)
      return d !== undefined && !d.ok ? 1 : 0
    } finally {
      daemon.close()
    }
  }
  return withLocalNode(({ id, store, names, book }) => {
    // Sealed as the node would seal it (kith-e2e/1), when the fleet encrypts.
    const e2e = new E2eKeys({
      id,
      fleet: book.fleet,
      store,
      book,
      agentSecret: () => undefined,
      now: () => Math.floor(Date.now() / 1000),
      log: (l) => out.err(l),
    })
    store.wireOf = (e) => e2e.wireOf(e)
    const event = buildChat(
      id,
      names,
      store,
      {
        channel,
        text,
        ...(values.reply ? { reply: values.reply } : {}),
        ...(values.interrupt ? { interrupt: true } : {}),
      },
      (t, s) => e2e.sign(t, s),
    )
    store.enqueue(event, Math.floor(Date.now() / 1000))
    if (values.json) out.json({ id: event.id, queued: true, delivery: null })
    else
      out.line(
        `queued ${event.id.slice(0, 12)}… in the outbox: kith up is not running; it will send it`,
      )
    return 0
  })
}

/** What the command index loads. */
export { sendCommand as command, runSend as run }
