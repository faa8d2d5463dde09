import { parseChannel } from '../../events/chat.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { requireNode } from '../control-client.js'

export const cancelCommand = declare({
  name: 'cancel',
  summary: 'cancel the turn an agent is running in a channel',
  usage: ["kith cancel '#channel' [AGENT]"],
  arity: { min: 1, max: 2, error: 'kith cancel takes a channel and optionally an agent' },
  options: {},
  about: `Cancels the turn an agent is running in the channel (every agent there, or the one named), from
any device of the agent's owner. AGENT is a name as in a mention (alice/helper where it is
ambiguous). The cancel names the prompts still waiting for an answer there, as this node knows
them: the hosting node stops a turn only if it runs one of those, and ignores a cancel older
than 5 minutes. The agent gets ACP session/cancel; one still busy after a 5 s grace window is
stopped and restarted. When this node knows that nothing is running there (the agent is hosted
here and idle, or its node reported it idle since), it sends nothing and says so (exit 5).
Needs the node running (kith up).`,
})

export async function runCancel(argv: string[], out: Out): Promise<number> {
  const parsed = cancelCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { positionals } = parsed
  const daemon = await requireNode('kith cancel needs the node running: start kith up')
  try {
    const channel = parseChannel(positionals[0]!)
    const agent = positionals[1]?.replace(/^@/, '')
    const r = await daemon.request('cancel', {
      channel,
      ...(agent ? { agent } : {}),
    })
    out.line(
      `cancel sent to ${agent ? `@${agent}` : 'the agents'} in #${channel} (for ${r.prompts} open prompt${r.prompts === 1 ? '' : 's'})`,
    )
    if (r.warning !== undefined) out.err(`⚠ ${r.warning}`)
    return 0
  } finally {
    daemon.close()
  }
}

/** What the command index loads. */
export { cancelCommand as command, runCancel as run }
