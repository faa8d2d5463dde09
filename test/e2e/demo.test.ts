import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const demo = fileURLToPath(new URL('../../scripts/demo.js', import.meta.url))

describe('npm run demo (the README first command)', () => {
  it(
    'pairs two fresh nodes, carries a message each way, prompts an agent and approves its tool call',
    { timeout: 60_000 },
    async () => {
      const stdout = await new Promise<string>((resolve, reject) =>
        execFile(
          process.execPath,
          [demo],
          { env: { ...process.env, KITH_DEMO_PORT: '0' } },
          (err, out, errOut) =>
            err ? reject(new Error(`${err.message}\n${out}\n${errOut}`)) : resolve(out),
        ),
      )
      expect(stdout).toMatch(/owner\s+npub1\w+\s+\(created\)/)
      expect(stdout).toMatch(/laptop shows (\d{3} \d{3}), devbox shows \1/)
      expect(stdout).toMatch(/confirming the 6 digits on both sides automatically/)
      expect(stdout).toMatch(/paired: devbox npub1\w+ is now a device of this fleet/)
      expect(stdout).toMatch(/laptop \[device\]: hello @devbox/)
      expect(stdout).toMatch(/devbox \[device\]: thanks, I am up/)
      expect(stdout).toMatch(/devbox\s+npub1\w+\s+active/)
      expect(stdout).toMatch(/claude \[agent\] replied: hello from the laptop/)
      expect(stdout).toMatch(/claude #ops: ⚙ run tests \(in_progress\)\n.*claude #ops: … checking/)
      expect(stdout).toMatch(/claude \[agent\] replied: done/)
      expect(stdout).toMatch(
        /🔐 claude asks to run: rm -rf build\s+\[1\] Allow once\s+\[2\] Reject/,
      )
      expect(stdout).toMatch(/claude \[agent\] replied: permission: selected allow/)
      expect(stdout).toMatch(/agent\s+claude \(kith-fake-agent 1\.0\.0\): idle/)
      expect(stdout).toMatch(/both nodes stopped cleanly/)
    },
  )
})
