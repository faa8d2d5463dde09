import { KithError } from '../../errors.js'
import { parseChannel } from '../../events/chat.js'
import { resolveKithHome } from '../../identity/home.js'
import { serveEdgeAgent } from '../../acp/edge-agent.js'
import { acpSessionBook } from '../acp-sessions.js'
import { requireNode } from '../control-client.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'

export const acpCommand = declare({
  name: 'acp',
  summary: "be an ACP agent (stdio) for an editor: any machine's agent, through this node",
  usage: ['kith acp AGENT[@MACHINE] [--channel NAME] [--project NAME [--worktree]]'],
  arity: { min: 1, max: 1, error: 'kith acp takes one agent: kith acp claude@devbox' },
  options: {
    channel: {
      type: 'string',
      value: 'NAME',
      description: "the channel the editor's sessions are threads of (default acp)",
    },
    project: {
      type: 'string',
      value: 'NAME',
      description:
        "start new sessions in this project of the agent's host (kith project list there)",
    },
    worktree: {
      type: 'boolean',
      description: '(with --project) each new session in a git worktree of its own',
    },
  },
  about: `Speaks the Agent Client Protocol on stdin/stdout, so an ACP editor (Zed, a JetBrains IDE, any
ACP client) launches it as it launches claude-agent-acp, and relays each session to AGENT
wherever it runs in the fleet: a session is a thread in the channel, each prompt a message this
device signs, each answer to a permission request a decision this device signs and the host
checks as any other. The agent's streamed updates (text, thoughts, plans, tool calls, diffs)
come back to the editor as they happen; a cancel stops the session's turn; a mode change is a
session request the host's approvers policy decides. The editor's own files and terminals are
never offered to the agent: it runs on its machine, with its own tools.

kith up also serves the same over ACP's remote transport (WebSocket and Streamable HTTP) at
ws://127.0.0.1:7449/acp/AGENT[@MACHINE] (--acp-port, --no-acp), for clients that speak it; they
present the token in KITH_HOME/acp-token as "Authorization: Bearer TOKEN".

For Zed, in settings.json: "agent_servers": { "devbox claude": { "command": "kith",
"args": ["acp", "claude@devbox"] } }. Needs kith up running on this machine.`,
})

export async function runAcp(argv: string[], out: Out): Promise<number> {
  const parsed = acpCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  if (values.worktree === true && values.project === undefined)
    throw new KithError('usage', '--worktree goes with --project NAME')
  const [name, machine] = positionals[0]!.replace(/^@/, '').split('@') as [string, string?]
  const channel = parseChannel(values.channel ?? 'acp')
  const home = resolveKithHome()
  const node = await requireNode('kith acp needs the node running: start kith up', home)
  try {
    const agent = await node.request('agent', { name })
    if (machine !== undefined && machine !== agent.host)
      throw new KithError(
        'not-found',
        agent.host === null
          ? `no machine online reports hosting @${agent.name} (is kith up running on ${machine}?)`
          : `@${agent.name} runs on ${agent.host}, not ${machine}: kith acp ${agent.name}@${agent.host}`,
      )
    // stdout is the protocol: everything for the person goes to stderr.
    await serveEdgeAgent({
      node: node.asNodeApi(),
      agent,
      channel,
      ...(values.project === undefined ? {} : { project: values.project }),
      worktree: values.worktree === true,
      book: acpSessionBook(home),
      input: process.stdin,
      output: process.stdout,
      log: (line) => out.err(`kith acp: ${line}`),
    })
    return 0
  } finally {
    node.close()
  }
}

/** What the command index loads. */
export { acpCommand as command, runAcp as run }
