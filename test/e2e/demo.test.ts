import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const demo = fileURLToPath(new URL('../../scripts/demo.js', import.meta.url))

describe('npm run demo (the README first command)', () => {
  it('initialises a fresh KITH_HOME, runs a hub, round-trips an event and refuses a stranger', async () => {
    const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) =>
      execFile(process.execPath, [demo, '--once'], (err, out, errOut) =>
        err ? reject(new Error(`${err.message}\n${errOut}`)) : resolve({ stdout: out }),
      ),
    )
    expect(stdout).toMatch(/owner\s+npub1\w+\s+\(created\)/)
    expect(stdout).toMatch(/hub listening on ws:\/\/127\.0\.0\.1:\d+/)
    expect(stdout).toMatch(/read back from #ops: "hello from kith"/)
    expect(stdout).toMatch(/refused: restricted: /)
    expect(stdout).toMatch(/done\./)
  })
})
