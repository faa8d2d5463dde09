// opencode (opencode-ai, `opencode acp`, pinned in test/agents/pinned), hosted by a real devbox
// node, its bash tool gated by "permission": {"bash": "ask"}: a real session/request_permission
// becomes a kind-4142 card that the laptop answers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { approveProofCall, processesIn, proofTurn, status } from './fleet.js'
import { startOpencodeFleet } from './opencode-fleet.js'
import { startMockModel, type MockModel, type ModelRequest } from './mock-model.js'

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
    const fleet = await startOpencodeFleet(model)
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
