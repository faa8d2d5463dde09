import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runKith } from '../helpers/cli.js'
import { tempDir } from '../helpers/tmp.js'

describe('kith service (the real binary)', () => {
  it('install --dry-run prints the unit it would write and the commands, and writes nothing', async () => {
    const home = join(tempDir(), 'h')
    const config = tempDir()
    const env = { XDG_CONFIG_HOME: config }
    const r = await runKith(['service', 'install', '--dry-run', '--', '--no-web'], { home, env })
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toContain(`would write ${join(config, 'systemd', 'user', 'kith.service')}:`)
    expect(r.stdout).toMatch(/^ExecStart=\S*node \S+\/bin\/kith\.js up --no-web$/m)
    expect(r.stdout).toContain(`Environment=KITH_HOME=${home}`)
    expect(r.stdout).toContain('would run: systemctl --user enable --now kith.service')
    const j = await runKith(['service', 'install', '--dry-run', '--json'], { home, env })
    const parsed = JSON.parse(j.stdout) as { path: string; content: string; dryRun: boolean }
    expect(parsed.dryRun).toBe(true)
    expect(parsed.content).toMatch(/\nRestart=on-failure\n/)
    const none = await runKith(['service', 'uninstall'], { home, env })
    expect(none.code).toBe(5)
    expect(none.stderr).toMatch(/no service installed/)
    const bad = await runKith(['service', 'start'], { home, env })
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/unknown service command "start"/)
  })
})
