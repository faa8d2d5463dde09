import { execFileSync } from 'node:child_process'
import { chmodSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runKith } from '../helpers/cli.js'
import { tempDir } from '../helpers/tmp.js'

describe('commands declared once', () => {
  it('prints a command’s help from its declaration, by kith help CMD and CMD --help alike', async () => {
    const home = join(tempDir(), 'h')
    const a = await runKith(['help', 'fleet'], { home })
    const b = await runKith(['fleet', '--help'], { home })
    expect(a.code).toBe(0)
    expect(a.stdout).toBe(b.stdout)
    // The option the parser takes is the one the help names (it once took --rearm silently).
    expect(a.stdout).toMatch(/--rearm\s+\(invite\) clear the lock/)
    expect(a.stdout).toMatch(/^Options:$/m)
    const sub = await runKith(['help', 'agent', 'logs'], { home })
    expect(sub.stdout).toMatch(/^Usage: kith agent logs NAME/)
    const main = await runKith(['help'], { home })
    expect(main.stdout).toMatch(/^ {2}doctor +check this machine/m)
  })

  it('refuses a misspelt option with did-you-mean and exit 2, never parseArgs’ raw message', async () => {
    const home = join(tempDir(), 'h')
    const r = await runKith(['status', '--jsn'], { home })
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/Unknown option '--jsn' for kith status \(did you mean --json\?\)/)
    expect(r.stderr).toMatch(/Usage: kith status \[--json\]/)
    expect(r.stderr).not.toMatch(/To specify a positional argument/)
    const value = await runKith(['log', '--limit'], { home })
    expect(value.code).toBe(2)
    expect(value.stderr).toMatch(/--limit needs a value \(--limit N\)/)
    const sub = await runKith(['channel', 'lsit'], { home })
    expect(sub.code).toBe(2)
    expect(sub.stderr).toMatch(
      /unknown channel command "lsit" \(did you mean kith channel list\?\)/,
    )
  })

  it('suggests the nearest command for an unknown one', async () => {
    const home = join(tempDir(), 'h')
    const r = await runKith(['chta'], { home })
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/unknown command "chta" \(did you mean kith chat\?\)/)
    expect((await runKith(['help', 'chta'], { home })).stderr).toMatch(/did you mean kith chat\?/)
  })

  it('generates completion for bash, zsh and fish from the declarations', async () => {
    const home = join(tempDir(), 'h')
    for (const shell of ['bash', 'zsh', 'fish']) {
      const r = await runKith(['completion', shell], { home })
      expect(r.code).toBe(0)
      for (const word of ['chat', 'doctor', 'completion', '--follow', 'invite', '--rearm']) {
        expect(r.stdout).toContain(
          word.startsWith('--') && shell === 'fish' ? `-l ${word.slice(2)}` : word,
        )
      }
    }
    // The bash script really completes: source it and ask for `kith fleet --re<TAB>`.
    const script = (await runKith(['completion', 'bash'], { home })).stdout
    const asked = execFileSync(
      'bash',
      [
        '-c',
        `${script}\nCOMP_WORDS=(kith fleet --re); COMP_CWORD=2; _kith; echo "\${COMPREPLY[@]}"`,
      ],
      { encoding: 'utf8' },
    )
    expect(asked.trim()).toBe('--rearm')
    const bad = await runKith(['completion', 'tcsh'], { home })
    expect(bad.code).toBe(2)
  })

  it('kith doctor checks KITH_HOME, key modes, node and hubs, one line each, and fails on any', async () => {
    const home = join(tempDir(), 'h')
    const none = await runKith(['doctor', '--json'], { home })
    expect(none.code).toBe(1)
    expect(JSON.parse(none.stdout)).toMatchObject({
      ok: false,
      checks: [{ check: 'KITH_HOME', ok: false }],
    })
    expect((await runKith(['init', '--name', 'box'], { home })).code).toBe(0)
    // A hub that answers NIP-11 with its Date: reachable, clock in step.
    const hub = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/nostr+json' })
      res.end('{}')
    })
    await new Promise<void>((resolve) => hub.listen(0, '127.0.0.1', resolve))
    try {
      const url = `ws://127.0.0.1:${(hub.address() as AddressInfo).port}`
      expect((await runKith(['hub', 'add', url], { home })).code).toBe(0)
      const good = await runKith(['doctor', '--json'], { home })
      const report = JSON.parse(good.stdout) as {
        ok: boolean
        checks: { check: string; ok: boolean; detail: string }[]
      }
      expect(good.code).toBe(0)
      expect(report.ok).toBe(true)
      expect(report.checks.map((c) => c.check)).toEqual([
        'KITH_HOME',
        'key file owner.key',
        'key file device.key',
        'node',
        `hub ${url}`,
      ])
      expect(report.checks.find((c) => c.check === 'node')?.detail).toMatch(/not running/)
      expect(report.checks.at(-1)?.detail).toMatch(/reachable .*clock in step/)
      chmodSync(join(home, 'device.key'), 0o644)
      const bad = await runKith(['doctor'], { home })
      expect(bad.code).toBe(1)
      expect(bad.stdout).toMatch(/^✗ key file device.key: mode 0644, should be 0600/m)
      expect(bad.stdout).toMatch(/^✓ key file owner.key: mode 0600/m)
    } finally {
      hub.close()
    }
  })
})
