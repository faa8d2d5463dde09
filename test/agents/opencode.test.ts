// opencode (opencode-ai, `opencode acp`, pinned in test/agents/pinned), hosted by a real devbox
// node, its bash tool gated by "permission": {"bash": "ask"}: a real session/request_permission
// becomes a kind-4142 card that the laptop answers.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  approveProofCall,
  pinnedFile,
  processesIn,
  proofTurn,
  startFleet,
  status,
} from './fleet.js'
import { startMockModel, type MockModel, type ModelRequest } from './mock-model.js'

// The binary opencode-ai's postinstall puts in place of its launcher (allowed in
// test/agents/pinned/package.json allowScripts).
const opencode = () => pinnedFile('opencode-ai', 'bin', 'opencode.exe')

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
      return proofTurn('bash', req)
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
    const q = await fleet.ask('@opencode write the proof file')
    const withResult = await approveProofCall(fleet, model, q, [
      'allow_once',
      'allow_always',
      'reject_once',
    ])
    expect(withResult.api).toBe('chat')
    expect(withResult.lastUserText).toContain('write the proof file')
    expect(withResult.tools).toContain('bash')

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
