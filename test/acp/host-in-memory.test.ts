import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import type { PermissionAnswer, PermissionAsk } from '../../src/acp/agent-process.js'
import { AgentHost, type TurnOutcome } from '../../src/acp/host.js'
import { inProcessAgent, type InProcessAgent } from '../helpers/in-process-agent.js'
import { tempDir } from '../helpers/tmp.js'

// The host over in-memory streams (HostOptions.transport), with an in-process ACP agent made
// with the SDK's agent side: the host's turn, permission and cancel paths, in the fast tier.

function host(agent: InProcessAgent): AgentHost {
  const dir = tempDir()
  const h = new AgentHost(
    'mem',
    { argv: ['in-process'], cwd: dir, logPath: join(dir, 'mem.log') },
    () => undefined,
    { transport: agent.transport },
  )
  onTestFinished(() => h.stop())
  return h
}

function prompt(
  h: AgentHost,
  text: string,
  permission: (ask: PermissionAsk) => Promise<PermissionAnswer> = () =>
    Promise.resolve('cancelled'),
): Promise<TurnOutcome> {
  return new Promise((resolve) =>
    h.enqueue({ channel: 'ops', text, prompt: `p-${text}`, done: resolve, permission }),
  )
}

describe('AgentHost over in-memory streams (an in-process ACP agent)', () => {
  it('a prompt gets the agent reply, over one started agent', async () => {
    const agent = inProcessAgent()
    const h = host(agent)
    expect(await prompt(h, 'echo hello')).toEqual({ ok: true, text: 'hello' })
    expect(await prompt(h, 'echo again')).toEqual({ ok: true, text: 'again' })
    expect(h.info).toEqual({ name: 'kith-in-process-agent', version: '1.0.0' })
    expect(agent.starts()).toBe(1)
    // Set once the turn's end is told (after its job's done).
    await expect.poll(() => h.state).toBe('idle')
  })

  it("a permission request goes to the job's asker and its answer back to the agent", async () => {
    const agent = inProcessAgent()
    const h = host(agent)
    const asked: PermissionAsk[] = []
    const allowed = await prompt(h, 'permission rm -rf build', (ask) => {
      asked.push(ask)
      // While a person is asked, the host says so.
      expect(h.state).toBe('awaiting-permission')
      return Promise.resolve({ optionId: 'allow' })
    })
    expect(allowed).toEqual({ ok: true, text: 'outcome: allow' })
    expect(asked).toHaveLength(1)
    expect(asked[0]).toMatchObject({
      title: 'rm -rf build',
      toolKind: 'execute',
      toolCallId: 'call-1',
      rawInput: { command: 'rm -rf build' },
      options: [
        { optionId: 'allow', name: 'Allow once', kind: 'allow_once' },
        { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
      ],
    })
    // The session's cwd is put on the card (where a command would run).
    expect(asked[0]?.cwd).toBeTypeOf('string')
    // Nobody allowed answered: the agent is told cancelled.
    expect(await prompt(h, 'permission ls')).toEqual({ ok: true, text: 'outcome: cancelled' })
    // Set once the turn's end is told (after its job's done).
    await expect.poll(() => h.state).toBe('idle')
  })

  it('a cancel sends session/cancel and ends the turn as cancelled', async () => {
    const agent = inProcessAgent()
    const h = host(agent)
    const turn = prompt(h, 'hang')
    const sessionId = await agent.hanging()
    expect(h.runningIn({ channel: 'ops' })?.prompt).toBe('p-hang')
    expect(h.cancel({ channel: 'ops' })).toBe(true)
    expect(await turn).toMatchObject({ ok: false, reason: 'cancelled' })
    expect(agent.cancelled).toEqual([sessionId])
    // Nothing runs there now: a second cancel stops nothing, and the agent was not restarted.
    expect(h.cancel({ channel: 'ops' })).toBe(false)
    expect(await prompt(h, 'echo after')).toEqual({ ok: true, text: 'after' })
    expect(agent.starts()).toBe(1)
    expect(h.crashes).toBe(0)
  })
})
