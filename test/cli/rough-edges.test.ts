import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runKith } from '../helpers/cli.js'
import { tempDir } from '../helpers/tmp.js'

const bin = join(import.meta.dirname, '../../bin/kith.js')

/** Runs kith with its stdout closed before it writes: as `kith … | head` once head has left. */
function runWithClosedStdout(
  args: string[],
  home: string,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], {
      env: { ...process.env, KITH_HOME: home },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    child.stdout.destroy()
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('close', (code) => resolve({ code, stderr }))
  })
}

describe('CLI rough edges', () => {
  it('kith log --json | head ends quietly when the reader goes away', async () => {
    const home = join(tempDir(), 'h')
    expect((await runKith(['init', '--name', 'box'], { home })).code).toBe(0)
    for (const text of ['one', 'two']) {
      expect((await runKith(['send', '#ops', text], { home })).code).toBe(0)
    }
    const r = await runWithClosedStdout(['log', '#ops', '--json'], home)
    expect(r.stderr).toBe('')
    expect(r.code).toBe(0)
  })

  it('kith send to a typo of a channel that exists asks did-you-mean (exit 5); --new starts it', async () => {
    const home = join(tempDir(), 'h')
    expect((await runKith(['init', '--name', 'box'], { home })).code).toBe(0)
    // A first channel is just started: nothing is near it.
    expect((await runKith(['send', '#ops', 'one'], { home })).code).toBe(0)
    const typo = await runKith(['send', '#osp', 'two'], { home })
    expect(typo.code).toBe(5)
    expect(typo.stderr).toMatch(/nobody has posted in #osp yet .*did you mean #ops\?.*--new/)
    const log = await runKith(['log', '#osp'], { home })
    expect(log.code).toBe(5)
    expect((await runKith(['send', '#osp', 'two', '--new'], { home })).code).toBe(0)
    expect((await runKith(['log', '#osp'], { home })).stdout).toMatch(/two/)
  })

  it('commands that need the node say to run kith init first on a fresh machine (exit 3)', async () => {
    const home = join(tempDir(), 'h')
    for (const args of [['chat'], ['cancel', '#ops'], ['permit'], ['watch']]) {
      const r = await runKith(args, { home })
      expect(r.code).toBe(3)
      expect(r.stderr).toMatch(/run `kith init` first/)
    }
  })

  it('revoking asks for --yes when stdin is not a terminal; a name that matches nothing exits 5', async () => {
    const home = join(tempDir(), 'h')
    expect((await runKith(['init', '--name', 'box'], { home })).code).toBe(0)
    const unconfirmed = await runKith(['device', 'revoke', 'box'], { home })
    expect(unconfirmed.code).toBe(2)
    expect(unconfirmed.stderr).toMatch(/cannot be undone: pass --yes to confirm/)
    expect((await runKith(['device', 'list', '--offline'], { home })).stdout).toMatch(/box/)
    const missing = await runKith(['device', 'revoke', 'nobody', '--yes'], { home })
    expect(missing.code).toBe(5)
    expect(missing.stderr).toMatch(/no device named nobody/)
    expect((await runKith(['fleet', 'remove', 'nobody', '--yes'], { home })).code).toBe(5)
    expect((await runKith(['agent', 'revoke', 'nobody', '--yes'], { home })).code).toBe(5)
  })

  it('kith fleet name names the fleet on this machine; status shows it', async () => {
    const home = join(tempDir(), 'h')
    expect((await runKith(['init', '--name', 'box'], { home })).code).toBe(0)
    expect((await runKith(['fleet', 'name'], { home })).stdout).toMatch(/has no name here/)
    const set = await runKith(['fleet', 'name', 'Acme infra'], { home })
    expect(set.code).toBe(0)
    expect(set.stdout).toMatch(/named this fleet Acme infra/)
    const shown = await runKith(['fleet', 'name', '--json'], { home })
    expect(JSON.parse(shown.stdout)).toMatchObject({ name: 'Acme infra' })
    expect((await runKith(['status'], { home })).stdout).toMatch(/^fleet {3}Acme infra/m)
    expect((await runKith(['fleet', 'name', ''], { home })).code).toBe(2)
  })

  it('kith permit --help says who may approve as the node decides it', async () => {
    const home = join(tempDir(), 'h')
    const r = await runKith(['permit', '--help'], { home })
    expect(r.stdout).not.toMatch(/Only the agent's owner/)
    expect(r.stdout).toMatch(/approvers\s+policy names/)
    expect(r.stdout).toMatch(/fleet lets every member/)
  })
})
