import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { runKith, setupKith, startNodeProcess } from '../helpers/cli.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

describe('kith broadcast (kith up, fake ACP agents)', () => {
  it(
    'one prompt to several agents, each in its own thread, with a receipt per agent',
    { timeout: 120_000 },
    async () => {
      const home = join(tempDir(), 'h')
      await setupKith(['init', '--name', 'box'], { home })
      for (const [name, command] of [
        ['bot', [process.execPath, fakeAgent]],
        ['twin', [process.execPath, fakeAgent]],
        // Its command cannot start: its turn fails, and the receipt says why.
        ['broken', [join(tempDir(), 'no-such-agent')]],
        // It dies on every prompt.
        ['crashy', [process.execPath, fakeAgent, '--crash']],
        ['gone', [process.execPath, fakeAgent]],
      ] as const) {
        const add = await setupKith(['agent', 'add', name, '--', ...command], { home })
        expect(add.code, add.stderr).toBe(0)
      }
      expect((await runKith(['agent', 'revoke', 'gone', '--yes'], { home })).code).toBe(0)
      const node = await startNodeProcess(home, ['--port', '0'])
      const r = await runKith(
        [
          'broadcast',
          '#ops',
          'echo hello all',
          '--agents',
          'bot,twin,broken,crashy,gone',
          '--json',
          '--wait',
          '60',
        ],
        { home },
      )
      expect(r.code, r.stderr).toBe(1)
      const { receipts } = JSON.parse(r.stdout) as {
        receipts: {
          agent: string
          status: string
          prompt?: string
          reason?: string
          answer?: string
        }[]
      }
      const by = Object.fromEntries(receipts.map((x) => [x.agent, x]))
      expect(by.bot).toMatchObject({ status: 'answered', answer: 'hello all' })
      expect(by.twin).toMatchObject({ status: 'answered', answer: 'hello all' })
      // Each its own thread (its own prompt, so its own session).
      expect(by.bot!.prompt).not.toBe(by.twin!.prompt)
      expect(by.broken).toMatchObject({ status: 'failed' })
      expect(by.broken!.reason).toMatch(/^⚠ broken did not answer: /)
      expect(by.crashy).toMatchObject({ status: 'failed' })
      expect(by.crashy!.reason).toMatch(/^⚠ crashy did not answer: agent crashed/)
      expect(by.gone).toMatchObject({ status: 'refused' })
      expect(by.gone!.reason).toMatch(/not sent/)

      // Without --json: a line per change.
      const lines = await runKith(['broadcast', '#ops', 'echo again', '--agents', 'bot'], { home })
      expect(lines.code, lines.stderr).toBe(0)
      expect(lines.stdout).toMatch(/^bot {2}queued\n(bot {2}started\n)?bot {2}answered: again\n$/)
      expect(await node.stop()).toBe(0)
    },
  )
})
