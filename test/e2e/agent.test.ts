import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { bytesToHex } from '@noble/hashes/utils.js'
import { verifyAuthTag } from '../../src/grants/nip-oa.js'
import { ControlClient } from '../../src/node/control.js'
import type { ChatItem } from '../../src/node/daemon.js'
import { runKith, startHubProcess, startNodeProcess } from '../helpers/cli.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

async function history(home: string): Promise<ChatItem[]> {
  const c = await ControlClient.connect(join(home, 'node.sock'))
  if (c === undefined) return []
  try {
    return await c.request<ChatItem[]>('history', { channel: 'ops', limit: 1000 })
  } finally {
    c.close()
  }
}

async function ask(home: string, text: string): Promise<string> {
  const r = await runKith(['send', '#ops', text, '--json'], { home })
  expect(r.code, r.stderr).toBe(0)
  return (JSON.parse(r.stdout) as { id: string }).id
}

/** The agent's reply threaded under `question`, once it has arrived. */
async function replyTo(home: string, question: string): Promise<ChatItem> {
  let found: ChatItem | undefined
  await expect
    .poll(
      async () => {
        found = (await history(home)).find((i) =>
          i.event.tags.some((t) => t[0] === 'e' && t[1] === question),
        )
        return found !== undefined
      },
      { timeout: 20_000 },
    )
    .toBe(true)
  return found!
}

describe(
  'agents hosted by a node, prompted from another (fake ACP agent, real processes)',
  { timeout: 90_000 },
  () => {
    it('answers @mentions with replies signed by the agent key, streams, and survives a crash', async () => {
      const dir = tempDir()
      const owner = bytesToHex(generateSecretKey())
      const hubHome = join(dir, 'hubhome')
      await runKith(['init', '--owner-key-stdin'], { home: hubHome, input: owner })
      const hub = await startHubProcess(['--db', join(dir, 'hub.db')], hubHome)
      const laptop = join(dir, 'laptop')
      const devbox = join(dir, 'devbox')
      for (const [home, name] of [
        [laptop, 'laptop'],
        [devbox, 'devbox'],
      ] as const) {
        await runKith(['init', '--name', name, '--owner-key-stdin'], { home, input: owner })
        await runKith(['hub', 'add', hub.url], { home })
      }
      const added = await runKith(['agent', 'add', 'claude', '--', process.execPath, fakeAgent], {
        home: devbox,
      })
      expect(added.code, added.stderr).toBe(0)
      const nd = await startNodeProcess(devbox)
      const nl = await startNodeProcess(laptop)
      await nd.waitFor(/linked to/)
      await nl.waitFor(/linked to/)

      const q1 = await ask(laptop, '@claude echo hello from the laptop')
      const r1 = await replyTo(laptop, q1)
      expect(r1.event.content).toBe('hello from the laptop')
      expect(r1.from).toMatchObject({ name: 'claude', role: 'agent' })
      expect(r1.event.tags).toContainEqual(['e', q1, '', 'root'])
      // Third-party clients can see who authorized the agent (NIP-OA).
      expect(verifyAuthTag(r1.event)).toMatch(/^[0-9a-f]{64}$/)

      const q2 = await ask(laptop, '@claude stream 3')
      expect((await replyTo(laptop, q2)).event.content).toBe('chunk 1 chunk 2 chunk 3')

      const q3 = await ask(laptop, '@claude crash')
      expect((await replyTo(laptop, q3)).event.content).toMatch(
        /^⚠ claude did not answer: agent crashed/,
      )
      const q4 = await ask(laptop, '@claude echo back again')
      expect((await replyTo(laptop, q4)).event.content).toBe('back again')

      // An adapter printing noise on stdout is tolerated (and logged), not fatal.
      const q5 = await ask(laptop, '@claude garbage')
      expect((await replyTo(laptop, q5)).event.content).toBe('still here')
      expect(readFileSync(join(devbox, 'agents', 'claude.log'), 'utf8')).toMatch(
        /\[non-JSON stdout\] .*just noise/,
      )

      const status = JSON.parse((await runKith(['status', '--json'], { home: devbox })).stdout) as {
        agents: { name: string; state: string; crashes: number; adapter: { name?: string } }[]
      }
      expect(status.agents).toEqual([
        expect.objectContaining({
          name: 'claude',
          crashes: 1,
          adapter: { name: 'kith-fake-agent', version: '1.0.0' },
        }),
      ])
    })
  },
)
