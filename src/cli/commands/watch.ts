import { KithError } from '../../errors.js'
import type { WatchFrame } from '../../node/daemon.js'
import { parseCommandArgs } from '../args.js'
import type { Out } from '../io.js'
import { connectDaemon } from './chat-common.js'

export const watchHelp = `Usage: kith watch [AGENT] [--json]

Shows agents' side transcripts live, as they work: messages, thoughts, tool calls with their
status, plans. From any device of the agent's owner, or the one that prompted it (observer
frames are encrypted to those). Needs the node running (kith up). Ctrl-C stops.`

interface Update {
  sessionUpdate?: string
  content?: { type?: string; text?: string }
  title?: string
  status?: string
  toolCallId?: string
  entries?: { content?: string; status?: string }[]
  toolKind?: string
  policy?: string
}

/** One line per update, for a person. */
export function describeUpdate(u: Update): string | undefined {
  switch (u.sessionUpdate) {
    case 'agent_message_chunk':
      return u.content?.text
    case 'agent_thought_chunk':
      return `… ${u.content?.text ?? ''}`
    case 'tool_call':
      return `⚙ ${u.title ?? u.toolCallId ?? 'tool'} (${u.status ?? 'pending'})`
    case 'tool_call_update':
      return `⚙ ${u.title ?? u.toolCallId ?? 'tool'} → ${u.status ?? 'updated'}`
    case 'plan':
      return `plan: ${(u.entries ?? []).map((e) => `[${e.status ?? ' '}] ${e.content ?? ''}`).join('; ')}`
    case 'kith_auto_allowed':
      return `✓ ${u.toolKind ?? 'tool'} "${u.title ?? u.toolCallId ?? 'tool'}" allowed by policy (permissions: ${u.policy ?? '?'})`
    default:
      return undefined
  }
}

export async function runWatch(argv: string[], out: Out): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    argv,
    { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    watchHelp,
  )
  if (values.help) {
    out.line(watchHelp)
    return 0
  }
  if (positionals.length > 1)
    throw new KithError('usage', `kith watch takes at most one agent\n\n${watchHelp}`)
  const daemon = await connectDaemon()
  if (daemon === undefined)
    throw new KithError('io', 'kith watch needs the node running: start kith up')
  const agent = positionals[0]?.replace(/^@/, '')
  daemon.on('frame', (p) => {
    const frame = p as WatchFrame
    if (values.json) {
      out.line(JSON.stringify(frame))
      return
    }
    for (const u of frame.updates) {
      const line = describeUpdate(u as Update)
      if (line !== undefined) out.line(`${frame.agent.name} #${frame.channel}: ${line}`)
    }
  })
  await daemon.request('watch', agent === undefined ? {} : { agent })
  out.err(`watching ${agent === undefined ? 'every agent' : `@${agent}`}; Ctrl-C stops`)
  await daemon.untilClosedOrStopped()
  return 0
}
