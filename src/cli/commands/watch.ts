import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { TranscriptLines } from '../transcript.js'
import { wrap } from '../terminal-text.js'
import { stdoutLayout } from './chat-common.js'
import { requireNode } from '../control-client.js'

export { describeUpdate } from '../transcript.js'

export const watchCommand = declare({
  name: 'watch',
  summary: "an agent's side transcript, live (tool calls, thoughts, messages)",
  usage: ['kith watch [AGENT] [--json]'],
  arity: { min: 0, max: 1, error: 'kith watch takes at most one agent' },
  options: {
    json: { type: 'boolean', description: 'each frame as it came, one JSON object per line' },
  },
  about: `Shows agents' side transcripts live, as they work: messages and thoughts (gathered into whole
lines), tool calls with their status, plans, and where each turn starts and ends. From any
device of the agent's owner, or the one that prompted it (observer frames are encrypted to
those). AGENT is a name as in a mention (alice/helper where it is ambiguous); a name that is no
agent of the fleet is refused at once. --json prints each frame as it came, one JSON object per
line. Needs the node running (kith up). Ctrl-C stops.`,
})

/** A half line the agent stopped streaming into is printed after this long. */
const quietMs = 1500

export async function runWatch(argv: string[], out: Out): Promise<number> {
  const parsed = watchCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  const daemon = await requireNode('kith watch needs the node running: start kith up')
  const agent = positionals[0]?.replace(/^@/, '')
  const transcript = new TranscriptLines()
  // On a terminal, long lines wrap at word boundaries under their text, past "agent #channel: ".
  const print = (line: string) => {
    const width = stdoutLayout().width
    const hang = line.indexOf(': ') + 2
    out.line(width === undefined ? line : wrap(line, width, Math.min(hang, 30)).join('\n'))
  }
  daemon.on('frame', (frame) => {
    if (values.json) out.line(JSON.stringify(frame))
    else for (const line of transcript.frame(frame, Date.now())) print(line)
  })
  try {
    await daemon.request('watch', agent === undefined ? {} : { agent })
  } catch (err) {
    // An open control connection would keep this process waiting forever.
    daemon.close()
    throw err
  }
  const quiet = setInterval(() => {
    for (const line of transcript.flushQuiet(Date.now(), quietMs)) print(line)
  }, 250)
  out.err(`watching ${agent === undefined ? 'every agent' : `@${agent}`}; Ctrl-C stops`)
  await daemon.untilClosedOrStopped()
  clearInterval(quiet)
  for (const line of transcript.flushAll()) print(line)
  return 0
}

/** What the command index loads. */
export { watchCommand as command, runWatch as run }
