import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { bytesToHex } from '@noble/hashes/utils.js'
import { envAllowlist } from '../../src/acp/agent-process.js'
import { verifyAuthTag } from '../../src/grants/nip-oa.js'
import type { ChatItem } from '../../src/node/chat-store.js'
import {
  laptopAndDevbox,
  runKith,
  setupKith,
  spawnKith,
  startHubProcess,
  startNodeProcess,
} from '../helpers/cli.js'
import { ask, history, threadedUnder } from '../helpers/node-chat.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

/** The agent's event (of `kind`: a reply by default) threaded under `question`, once it has arrived. */
async function replyTo(home: string, question: string, kind = 9): Promise<ChatItem> {
  return (await threadedUnder(home, question, { kind }))[0]!
}

describe(
  'agents hosted by a node, prompted from another (fake ACP agent, real processes)',
  { timeout: 180_000 },
  () => {
    it('answers @mentions with replies signed by the agent key, streams, and survives a crash', async () => {
      // A plain fleet: what a third-party Nostr client reads (the reply and its NIP-OA tag).
      const { laptop, devbox } = await laptopAndDevbox(tempDir(), { plain: true })
      const added = await setupKith(['agent', 'add', 'claude', '--', process.execPath, fakeAgent], {
        home: devbox,
      })
      expect(added.code, added.stderr).toBe(0)
      const nd = await startNodeProcess(devbox, [
        '--permission-timeout',
        '8',
        '--cancel-grace',
        '1',
      ])
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

      // The side transcript reaches the prompting device live, encrypted to it (kith watch).
      const watch = spawnKith(['watch', 'claude'], laptop)
      await watch.waitFor(/watching @claude/)
      const qw = await ask(laptop, '@claude work')
      expect((await replyTo(laptop, qw)).event.content).toBe('done')
      await watch.waitFor(/claude #ops: ⚙ run tests \(in_progress\)/)
      await watch.waitFor(/claude #ops: … checking the output/)
      await watch.waitFor(/claude #ops: ⚙ run tests → completed/)
      await watch.waitFor(/claude #ops: done/)
      watch.child.kill('SIGTERM')
      // kith chat shows the agent's tool calls as a progress line, then its answer. (The same
      // text as the prompt above, possibly within the same second: still a second prompt.)
      const chat = spawnKith(['chat', '#ops'], laptop)
      await chat.waitFor(/── #ops ──/)
      chat.write('@claude work\n')
      await chat.waitFor(/⋯ claude: ⚙ run tests \(in_progress\)/)
      await chat.waitFor(
        /claude \[agent, authorized by [^\]]+\]: ↳ done[\s\S]*claude \[agent, authorized by [^\]]+\]: ↳ done/,
      )
      chat.write('/quit\n')
      expect(await chat.exit).toBe(0)

      // An adapter printing noise on stdout is tolerated (and logged), not fatal.
      const q5 = await ask(laptop, '@claude garbage')
      expect((await replyTo(laptop, q5)).event.content).toBe('still here')
      expect(readFileSync(join(devbox, 'agents', 'claude.log'), 'utf8')).toMatch(
        /\[non-JSON stdout\] .*just noise/,
      )

      // A gated tool call becomes a permission card (kind 4142) answered from another device.
      const q6 = await ask(laptop, '@claude permission rm -rf build')
      let card: ChatItem | undefined
      await expect
        .poll(
          async () => {
            card = (await history(laptop)).find(
              (i) => i.event.kind === 4142 && i.event.tags.some((t) => t[0] === 'e' && t[1] === q6),
            )
            return card !== undefined
          },
          { timeout: 20_000 },
        )
        .toBe(true)
      expect(JSON.parse(card!.event.content)).toMatchObject({
        title: 'rm -rf build',
        toolKind: 'execute',
        options: [
          { optionId: 'allow', name: 'Allow once', kind: 'allow_once' },
          { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
        ],
      })
      // While a person is asked, the agent shows as awaiting permission.
      expect((await runKith(['status', '--json'], { home: devbox })).stdout).toMatch(
        /"state": "awaiting-permission"/,
      )
      const permit = await runKith(['permit', card!.event.id.slice(0, 10), '1'], { home: laptop })
      expect(permit.code, permit.stderr).toBe(0)
      expect((await replyTo(laptop, q6, 9)).event.content).toBe('permission: selected allow')
      // Rejected, and unanswered (timed out after 8 s here): the agent hears it either way.
      const q7 = await ask(laptop, '@claude permission deploy')
      const card7 = await replyTo(laptop, q7, 4142)
      await runKith(['permit', card7.event.id, 'reject'], { home: laptop })
      expect((await replyTo(laptop, q7, 9)).event.content).toBe('permission: selected reject')
      // An agent that ends its turn saying nothing after a Reject (as real ones do) is reported
      // as rejected, not as a failure: no "did not answer", no error outcome.
      const qr = await ask(laptop, '@claude quiet-permission README.md')
      const cardR = await replyTo(laptop, qr, 4142)
      await runKith(['permit', cardR.event.id, 'reject'], { home: laptop })
      const rejectedReply = (await replyTo(laptop, qr, 9)).event
      expect(rejectedReply.content).toBe('✋ claude stopped: "README.md" was rejected')
      expect(rejectedReply.tags).toContainEqual(['outcome', 'cancelled', 'rejected'])
      const q8 = await ask(laptop, '@claude permission wait forever')
      await expect
        .poll(
          async () =>
            (await history(laptop))
              .filter((i) => i.event.tags.some((t) => t[1] === q8))
              .map((i) => i.event.content),
          {
            timeout: 20_000,
          },
        )
        .toEqual(
          expect.arrayContaining([
            'permission: cancelled',
            expect.stringMatching(/^⏱ permission request for "wait forever" timed out/),
          ]),
        )

      // The agent's environment holds only the allowlist: no KITH_HOME, no secret.
      const q9 = await ask(laptop, '@claude env')
      const envNames = (await replyTo(laptop, q9)).event.content.split(',')
      expect(envNames).not.toContain('KITH_HOME')
      for (const name of envNames) expect(envAllowlist).toContain(name)

      // Cancel: a cooperative agent ends its turn; one that ignores cancel is stopped after the
      // grace window (1 s here) and the next prompt still works.
      const q10 = await ask(laptop, '@claude hang')
      await expect
        .poll(async () => (await runKith(['status', '--json'], { home: devbox })).stdout)
        .toMatch(/"state": "working"/)
      expect((await runKith(['cancel', '#ops', 'claude'], { home: laptop })).code).toBe(0)
      expect((await replyTo(laptop, q10)).event.content).toBe('⏹ claude: turn cancelled')
      const q11 = await ask(laptop, '@claude hang hard')
      await expect
        .poll(async () => (await runKith(['status', '--json'], { home: devbox })).stdout)
        .toMatch(/"state": "working"/)
      await runKith(['cancel', '#ops'], { home: laptop })
      expect((await replyTo(laptop, q11)).event.content).toBe(
        '⏹ claude: turn cancelled (the agent was stopped)',
      )
      const q12 = await ask(laptop, '@claude echo alive')
      expect((await replyTo(laptop, q12)).event.content).toBe('alive')

      const status = JSON.parse((await runKith(['status', '--json'], { home: devbox })).stdout) as {
        agents: { name: string; state: string; crashes: number; adapter: { name?: string } }[]
      }
      expect(status.agents).toEqual([
        expect.objectContaining({
          name: 'claude',
          crashes: 2,
          adapter: { name: 'kith-fake-agent', version: '1.0.0' },
        }),
      ])
    })
  },
)

describe('agent sessions across a node restart', { timeout: 90_000 }, () => {
  it('resumes with session/load without re-posting the replay, or says it started anew', async () => {
    const dir = tempDir()
    const owner = bytesToHex(generateSecretKey())
    const hubHome = join(dir, 'hubhome')
    await setupKith(['init', '--owner-key-stdin'], { home: hubHome, input: owner })
    const hub = await startHubProcess(['--db', join(dir, 'hub.db')], hubHome)
    const devbox = join(dir, 'devbox')
    await setupKith(['init', '--name', 'devbox', '--owner-key-stdin'], {
      home: devbox,
      input: owner,
    })
    await setupKith(['hub', 'add', hub.url], { home: devbox })
    await setupKith(
      ['agent', 'add', 'claude', '--', process.execPath, fakeAgent, '--late-replay'],
      {
        home: devbox,
      },
    )
    await setupKith(['agent', 'add', 'gemini', '--', process.execPath, fakeAgent, '--no-load'], {
      home: devbox,
    })
    let node = await startNodeProcess(devbox)
    await node.waitFor(/linked to/)
    const threads: Record<string, string> = {}
    for (const name of ['claude', 'gemini']) {
      const q = await ask(devbox, `@${name} echo before`)
      threads[name] = q
      expect((await replyTo(devbox, q)).event.content).toBe('before')
    }
    await node.stop()
    node = await startNodeProcess(devbox)
    await node.waitFor(/linked to/)
    // A reply in the thread continues its session.
    const q1 = await ask(devbox, '@claude echo after', 'ops', threads.claude)
    expect((await replyTo(devbox, q1)).event.content).toBe('after')
    await node.waitFor(/agent claude: resumed session fake-1 for #ops/)
    // Nothing replayed is posted: neither what comes before the load's answer nor what an agent
    // goes on replaying after it.
    expect(
      (await history(devbox)).some((i) => /REPLAYED HISTORY|LATE REPLAY/.test(i.event.content)),
    ).toBe(false)
    const q2 = await ask(devbox, '@gemini echo after', 'ops', threads.gemini)
    expect((await replyTo(devbox, q2)).event.content).toBe('after')
    expect((await history(devbox)).map((i) => i.event.content)).toContain(
      `ℹ gemini started a new session in #ops (thread ${threads.gemini!.slice(0, 8)}): the agent cannot resume sessions (no session/load)`,
    )
  })
})
