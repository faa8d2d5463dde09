// codex-acp (@zed-industries/codex-acp, pinned in test/agents/pinned), hosted by a real devbox
// node and prompted from a real laptop node, with the loopback mock model as its provider.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { verifyEventSignature } from '../../src/events/event.js'
import { verifyAuthTag } from '../../src/grants/nip-oa.js'
import { runKith } from '../helpers/cli.js'
import { codexAcp, startCodexFleet } from './codex-fleet.js'
import { processesIn, startFleet, status } from './fleet.js'
import { startMockModel, type MockModel } from './mock-model.js'

let model: MockModel
beforeAll(async () => {
  model = await startMockModel()
})
afterAll(async () => {
  await model.close()
})

describe('codex-acp@0.16.0 with a loopback model', { timeout: 150_000 }, () => {
  it('answers an @codex prompt from the laptop with the model text, signed by the agent key', async () => {
    model.respond((req) =>
      req.lastUserText.includes('what is the build status')
        ? { text: 'The build is green (mock model).' }
        : { text: 'unexpected request' },
    )
    const fleet = await startCodexFleet(model)
    const q = await fleet.ask('@codex what is the build status?')
    const reply = await fleet.threaded(q)
    // codex-acp sends a config warning ("Model metadata for `mock-model` not found …") as an
    // ordinary agent_message_chunk before the answer; the model's text ends the reply.
    expect(reply.event.content.endsWith('The build is green (mock model).')).toBe(true)
    expect(reply.event.pubkey).toBe(fleet.agentPubkey)
    expect(verifyEventSignature(reply.event)).toBe(true)
    expect(verifyAuthTag(reply.event)).toMatch(/^[0-9a-f]{64}$/)
    expect(reply.from).toMatchObject({ name: 'codex', role: 'agent' })
    expect(reply.event.tags).toContainEqual(['e', q, '', 'root'])

    // What codex sent the model: the prompt (without the @mention) over the Responses API.
    const asked = model.requests.filter((r) => r.api === 'responses')
    expect(asked.length).toBeGreaterThanOrEqual(1)
    expect(asked.at(-1)!.lastUserText).toContain('what is the build status?')
    expect(asked.at(-1)!.lastUserText).not.toContain('@codex')
    expect((asked.at(-1)!.body as { stream?: boolean }).stream).toBe(true)

    expect((await status(fleet.devbox)).agents).toEqual([
      expect.objectContaining({
        name: 'codex',
        adapter: { name: 'codex-acp', version: '0.16.0' },
      }),
    ])

    // A reply in the thread continues its session (threads are sessions): codex sends the
    // earlier exchange.
    model.respond((req) => ({ text: `second answer (${req.toolResults.length} tool results)` }))
    const sent = await runKith(['send', '#ops', '@codex and now?', '--reply', q, '--json'], {
      home: fleet.laptop,
    })
    expect(sent.code, sent.stderr).toBe(0)
    const q2 = (JSON.parse(sent.stdout) as { id: string }).id
    expect((await fleet.threaded(q2)).event.content).toMatch(/second answer \(0 tool results\)$/)
    const input = (model.requests.at(-1)!.body as { input: unknown[] }).input
    expect(JSON.stringify(input)).toContain('The build is green (mock model).')

    // Stopped as a person stops it (SIGTERM), the node stops its agent: nothing is left running
    // in the agent's directory (codex-acp would not exit on its own when its stdin closes).
    expect(processesIn(fleet.agentCwd).length).toBeGreaterThan(0)
    await fleet.stop()
    expect(processesIn(fleet.agentCwd)).toEqual([])
  })

  it('without credentials or a provider, says so in one visible line with its login hints', async () => {
    const fleet = await startFleet({ name: 'codex', command: [codexAcp()] })
    const q = await fleet.ask('@codex hello?')
    const reply = await fleet.threaded(q)
    expect(reply.event.content).toMatch(/^⚠ codex did not answer: authentication required \(/)
    expect(reply.event.content).toContain('Use CODEX_API_KEY')
    expect(reply.event.content).not.toContain('\n')
    expect(reply.event.pubkey).toBe(fleet.agentPubkey)
  })
})
