// opencode (opencode-ai, `opencode acp`, pinned in test/agents/pinned), hosted by a real devbox
// node, its bash tool gated by "permission": {"bash": "ask"}: a real session/request_permission
// becomes a kind-4142 card that the laptop answers.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { verifyEventSignature } from '../../src/events/event.js'
import { runKith } from '../helpers/cli.js'
import { pinnedFile, processesIn, startFleet, status } from './fleet.js'
import { startMockModel, type MockModel, type ModelRequest } from './mock-model.js'

// The binary opencode-ai's postinstall puts in place of its launcher (allowed in
// test/agents/pinned/package.json allowScripts).
const opencode = () => pinnedFile('opencode-ai', 'bin', 'opencode.exe')

const command = 'echo kith-tool-ran > proof.txt && cat proof.txt'

let model: MockModel
beforeAll(async () => {
  model = await startMockModel()
})
afterAll(async () => {
  await model.close()
})

describe('opencode@1.18.33 with a loopback model', { timeout: 150_000 }, () => {
  it('asks permission for its bash tool call; approved from the laptop, the tool runs and the answer arrives', async () => {
    model.respond((req: ModelRequest) => {
      // opencode also asks the model for a session title, without tools: answer it plainly.
      if (req.tools.length === 0) return { text: 'Proof file' }
      if (req.toolResults.length > 0) {
        return { text: `The tool said: ${req.toolResults.at(-1)!.output.trim()}` }
      }
      return {
        toolCall: { name: 'bash', arguments: { command, description: 'Write the proof file' } },
      }
    })
    const fleet = await startFleet({
      name: 'opencode',
      command: [opencode(), 'acp'],
      prepare: ({ agentCwd }) => {
        writeFileSync(
          join(agentCwd, 'opencode.json'),
          JSON.stringify({
            $schema: 'https://opencode.ai/config.json',
            model: 'mock/mock-model',
            provider: {
              mock: {
                npm: '@ai-sdk/openai-compatible',
                name: 'Mock',
                options: { baseURL: model.baseUrl, apiKey: 'not-a-key' },
                models: { 'mock-model': { name: 'Mock model' } },
              },
            },
            permission: { bash: 'ask' },
          }),
        )
      },
    })
    const proof = join(fleet.agentCwd, 'proof.txt')
    const q = await fleet.ask('@opencode write the proof file')

    // The card: signed by the agent, the tool call's title and kind, the options as opencode
    // gave them. The tool has not run yet: it waits for a person.
    const card = await fleet.threaded(q, 4142)
    expect(card.event.pubkey).toBe(fleet.agentPubkey)
    expect(verifyEventSignature(card.event)).toBe(true)
    const ask = JSON.parse(card.event.content) as {
      title: string
      toolKind: string
      options: { optionId: string; name: string; kind: string }[]
    }
    expect(ask.title).toBe(command)
    expect(ask.toolKind).toBe('execute')
    expect(ask.options.map((o) => o.kind)).toEqual(['allow_once', 'allow_always', 'reject_once'])
    expect(existsSync(proof)).toBe(false)
    expect(model.requests.some((r) => r.toolResults.length > 0)).toBe(false)

    // Approved from the laptop: option 1 is the first option the agent gave (allow once).
    const permit = await runKith(['permit', card.event.id.slice(0, 12), '1'], {
      home: fleet.laptop,
    })
    expect(permit.code, permit.stderr).toBe(0)
    const decision = await fleet.threaded(card.event.id, 4143)
    expect(JSON.parse(decision.event.content)).toEqual({ optionId: ask.options[0]!.optionId })

    const reply = await fleet.threaded(q, 9)
    expect(reply.event.content).toBe('The tool said: kith-tool-ran')
    expect(reply.event.pubkey).toBe(fleet.agentPubkey)
    expect(verifyEventSignature(reply.event)).toBe(true)
    // The tool really ran, in the agent's cwd, and its output went back to the model.
    expect(readFileSync(proof, 'utf8')).toBe('kith-tool-ran\n')
    const withResult = model.requests.filter((r) => r.api === 'chat' && r.toolResults.length > 0)
    expect(withResult.map((r) => r.toolResults.at(-1)!.output.trim())).toEqual(['kith-tool-ran'])
    expect(withResult[0]!.lastUserText).toContain('write the proof file')
    expect(withResult[0]!.tools).toContain('bash')

    expect((await status(fleet.devbox)).agents).toEqual([
      expect.objectContaining({
        name: 'opencode',
        adapter: { name: 'OpenCode', version: '1.18.33' },
      }),
    ])
    await fleet.stop()
    expect(processesIn(fleet.agentCwd)).toEqual([])
  })
})
