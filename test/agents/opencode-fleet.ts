// opencode (opencode-ai, `opencode acp`, pinned in test/agents/pinned) hosted by the devbox of a
// real fleet, its provider the loopback mock model and its bash tool gated by
// "permission": {"bash": "ask"}, so a real session/request_permission reaches a person.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pinnedFile, startFleet, type Fleet } from './fleet.js'
import type { MockModel } from './mock-model.js'

// The binary opencode-ai's postinstall puts in place of its launcher (allowed in
// test/agents/pinned/package.json allowScripts).
export const opencode = () => pinnedFile('opencode-ai', 'bin', 'opencode.exe')

/** The fleet with agent `opencode` on the devbox, configured to use `model`. */
export function startOpencodeFleet(model: MockModel): Promise<Fleet> {
  return startFleet({
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
}
