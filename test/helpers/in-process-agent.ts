// An ACP agent that runs inside the test's own process: the SDK's agent side (acp.agent()) over a
// pair of in-memory byte streams, given to AgentHost as its transport (HostOptions.transport).
// A real ACP peer, speaking the protocol through the same SDK the fixtures' agent uses; only the
// process around it is missing. The prompt text is the script:
//   "echo <text>"          reply with <text>
//   "permission <title>"   ask permission for a tool call (execute), reply with the outcome
//   "hang"                 wait until cancelled (session/cancel), then end the turn as cancelled
import * as acp from '@agentclientprotocol/sdk'
import type { AgentTransport, AgentTransportFactory } from '../../src/acp/agent-transport.js'

export interface InProcessAgent {
  /** The transport factory to give the host. */
  transport: AgentTransportFactory
  /** How many times the host started it. */
  starts(): number
  /** The session/cancel notifications it received, by session id. */
  readonly cancelled: string[]
  /** Resolves once a turn waiting in "hang" is in progress (its session id). */
  hanging(): Promise<string>
}

export function inProcessAgent(): InProcessAgent {
  let starts = 0
  let sessions = 0
  const cancelled: string[] = []
  const cancels = new Map<string, () => void>()
  let hung: ((sessionId: string) => void) | undefined
  const hanging = new Promise<string>((resolve) => (hung = resolve))
  const app = () =>
    acp
      .agent({ name: 'kith-in-process-agent' })
      .onRequest(acp.methods.agent.initialize, () => ({
        protocolVersion: acp.PROTOCOL_VERSION,
        agentCapabilities: { loadSession: false },
        agentInfo: { name: 'kith-in-process-agent', version: '1.0.0' },
      }))
      .onRequest(acp.methods.agent.session.new, () => ({ sessionId: `mem-${++sessions}` }))
      .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
        cancelled.push(params.sessionId)
        cancels.get(params.sessionId)?.()
      })
      .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
        const text = params.prompt
          .map((b) => (b.type === 'text' ? b.text : ''))
          .join('')
          .trim()
        const say = (chunk: string) =>
          client.notify(acp.methods.client.session.update, {
            sessionId: params.sessionId,
            update: {
              sessionUpdate: 'agent_message_chunk',
              content: { type: 'text', text: chunk },
            },
          })
        const echo = /^echo (.*)$/s.exec(text)
        if (echo) {
          await say(echo[1]!)
          return { stopReason: 'end_turn' as const }
        }
        const permission = /^permission (.*)$/s.exec(text)
        if (permission) {
          const toolCall = {
            toolCallId: 'call-1',
            title: permission[1]!,
            kind: 'execute' as const,
            rawInput: { command: permission[1]! },
          }
          const asked: acp.RequestPermissionRequest = {
            sessionId: params.sessionId,
            toolCall,
            options: [
              { optionId: 'allow', name: 'Allow once', kind: 'allow_once' },
              { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
            ],
          }
          const answer = await client.request(acp.methods.client.session.requestPermission, asked)
          await say(
            answer.outcome.outcome === 'selected'
              ? `outcome: ${answer.outcome.optionId}`
              : 'outcome: cancelled',
          )
          return { stopReason: 'end_turn' as const }
        }
        if (text === 'hang') {
          await new Promise<void>((resolve) => {
            cancels.set(params.sessionId, resolve)
            hung?.(params.sessionId)
          })
          return { stopReason: 'cancelled' as const }
        }
        await say(`you said: ${text}`)
        return { stopReason: 'end_turn' as const }
      })
  const transport: AgentTransportFactory = (_spec, heard) => {
    starts++
    // Host → agent and agent → host, each a byte stream of JSON lines.
    const toAgent = new TransformStream<Uint8Array, Uint8Array>()
    const toHost = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        heard()
        controller.enqueue(chunk)
      },
    })
    const conn = app().connect(acp.ndJsonStream(toHost.writable, toAgent.readable))
    let running = true
    const exited = conn.closed.then(
      () => null,
      () => null,
    )
    void exited.then(() => (running = false))
    const t: AgentTransport = {
      output: toAgent.writable,
      input: toHost.readable,
      exited,
      get running() {
        return running
      },
      async stop() {
        running = false
        conn.close()
        await exited
      },
    }
    return Promise.resolve(t)
  }
  return { transport, starts: () => starts, cancelled, hanging: () => hanging }
}
