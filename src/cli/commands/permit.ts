import { KithError } from '../../errors.js'
import { parseChannel } from '../../events/chat.js'
import type { OpenCard } from '../../node/permission-cards.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { requireNode } from '../control-client.js'
import { previewLines } from './chat-common.js'

export const permitCommand = declare({
  name: 'permit',
  summary: "answer an agent's permission request with option N",
  usage: [
    "kith permit [--channel '#ops'] [--json]",
    "kith permit REQUEST OPTION [--channel '#ops'] [--json]",
  ],
  options: {
    channel: { type: 'string', value: "'#ops'", description: 'only the requests of this channel' },
    json: { type: 'boolean', description: 'print as JSON' },
  },
  about: `Without arguments: lists the permission requests (the cards in kith chat) still open as this
node knows them: not expired, not answered by you (from any of your devices), their turn not
over; with --channel, those of one channel. Cards this device cannot open (sealed before it
joined a sealed fleet) are not open for it: they are counted, not listed (--json: sealed). Under each, what the call will do as the agent told
it: the diff of an edit, the command and its cwd, the path of a read (at most 6 KiB: a longer one
is cut, and says how much of how much it shows); --json has it as preview (and previewBytes
when cut).

With REQUEST and OPTION: answers one. REQUEST is its id (the first characters are enough, if no
other request starts with them) or @agent (that agent's one open request; with --channel, its
one there), OPTION the option's number on the card, its option id, or a word: allow (the
"allow once" option, never "always"), always (the "always allow" option: its like then runs
without asking) or reject. The answer names the card
it answered. A request that has expired, that you already answered, or whose turn is over is
refused with the reason (exit 1); an ambiguous one lists the candidates (exit 2).

Needs the node running (kith up). Who may answer is decided by the node hosting the agent: the
agent's owner, from any of their devices, always; beyond them, whoever the agent's approvers
policy names (kith agent add/set --approvers): fleet lets every member of the fleet answer, a
list of npubs adds those people (with all their devices) or those single keys. An answer from
anyone else is refused in the channel and the request stays open; the hosting node applies the
first valid answer it receives. A card of a tool kind the agent's quorum names (kith agent add
--quorum N --for KINDS) waits for N different people; its 👥 line says how many allowed, and
allowing it twice as one person is refused ("you already allowed it").`,
})

/** "in 4 min", "3 min ago". */
function relative(seconds: number): string {
  const n = Math.abs(seconds)
  const text = n < 90 ? `${n} s` : `${Math.round(n / 60)} min`
  return seconds >= 0 ? `in ${text}` : `${text} ago`
}

/** One line per open card (and one for a warning), then what the call will do, for a person. */
export function describeCard(card: OpenCard, now: number): string[] {
  const agent = `${card.agent}${card.person === null ? '' : ` [agent of ${card.person}]`}`
  const options = card.options.map((o, i) => `${i + 1} ${o.name}`).join(', ')
  const expires = card.expires === null ? '' : `, expires ${relative(card.expires - now)}`
  const lines = [
    `${card.id.slice(0, 8)}  ${agent} in #${card.channel}: ${card.title} (${card.toolKind})  options: ${options}  (asked ${relative(card.createdAt - now)}${expires})`,
  ]
  if (card.sensitive !== null) lines.push(`          ⚠ ${card.sensitive}`)
  if (card.quorum !== null)
    lines.push(
      `          👥 needs ${card.quorum.n} people: ${card.quorum.text}${card.quorum.allowedBy.length === 0 ? '' : ` (allowed by ${card.quorum.allowedBy.join(', ')}${card.quorum.mine ? ': you' : ''})`}`,
    )
  lines.push(...previewLines(card.preview, { indent: 10 }))
  return lines
}

export async function runPermit(argv: string[], out: Out): Promise<number> {
  const parsed = permitCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  if (positionals.length !== 0 && positionals.length !== 2)
    throw new KithError(
      'usage',
      positionals.length === 1
        ? `kith permit ${positionals[0]} needs an OPTION too (its number on the card); kith permit alone lists the open requests with their options`
        : `kith permit takes REQUEST and OPTION, or nothing (to list)\n\n${permitCommand.help()}`,
    )
  const channel = values.channel === undefined ? undefined : parseChannel(values.channel)
  const daemon = await requireNode('kith permit needs the node running: start kith up')
  try {
    if (positionals.length === 0) {
      const cards = await daemon.request('cards', channel === undefined ? {} : { channel })
      const { count: sealed } = await daemon.request(
        'cards-sealed',
        channel === undefined ? {} : { channel },
      )
      if (values.json) {
        out.json({ requests: cards, sealed })
        return 0
      }
      if (sealed > 0)
        out.line(
          `${sealed} earlier card${sealed === 1 ? '' : 's'} sealed before this device joined (it never had their keys): not listed, and not open for it`,
        )
      if (cards.length === 0)
        out.line(
          `no open permission requests${channel === undefined ? '' : ` in #${channel}`} (as this node knows)`,
        )
      const now = Math.floor(Date.now() / 1000)
      for (const card of cards) for (const line of describeCard(card, now)) out.line(line)
      if (cards.length > 0) out.line('answer with: kith permit ID OPTION')
      return 0
    }
    const option = /^\d+$/.test(positionals[1]!) ? Number(positionals[1]) : positionals[1]!
    const r = await daemon.request('decide', {
      request: positionals[0]!,
      option,
      ...(channel === undefined ? {} : { channel }),
    })
    if (values.json) {
      out.json({ request: r.request, decision: r.event.id, option: r.option, title: r.title })
      return 0
    }
    out.line(
      `answered request ${r.request.slice(0, 8)} (${r.agent}: ${r.title}) with ${r.option.name}: sent ${r.event.id.slice(0, 12)}…`,
    )
    return 0
  } finally {
    daemon.close()
  }
}

/** What the command index loads. */
export { permitCommand as command, runPermit as run }
