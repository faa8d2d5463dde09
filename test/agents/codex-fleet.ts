// codex-acp (@zed-industries/codex-acp, pinned in test/agents/pinned) hosted by the devbox of a
// real fleet, its model provider the loopback mock model.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pinnedFile, startFleet, type Fleet } from './fleet.js'
import type { MockModel } from './mock-model.js'

// The platform binary itself (what the npm wrapper `codex-acp` runs with spawnSync): the node
// then signals the agent, not a wrapper that would leave it behind.
export const codexAcp = () =>
  pinnedFile(
    '@zed-industries',
    `codex-acp-${process.platform}-${process.arch}`,
    'bin',
    process.platform === 'win32' ? 'codex-acp.exe' : 'codex-acp',
  )

/** The fleet with agent `codex` on the devbox, configured to use `model`. */
export function startCodexFleet(model: MockModel): Promise<Fleet> {
  return startFleet({
    name: 'codex',
    command: [codexAcp()],
    prepare: ({ agentHome }) => {
      mkdirSync(join(agentHome, '.codex'))
      writeFileSync(
        join(agentHome, '.codex', 'config.toml'),
        [
          'model = "mock-model"',
          'model_provider = "mock"',
          '',
          '[model_providers.mock]',
          'name = "mock"',
          `base_url = "${model.baseUrl}"`,
          'wire_api = "responses"',
          '',
        ].join('\n'),
      )
    },
  })
}
