import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import type { ChatItem } from '../../src/node/chat-store.js'
import { laptopAndDevbox, runKith, setupKith, startNodeProcess } from '../helpers/cli.js'
import { ask, history, threadedUnder } from '../helpers/node-chat.js'
import { startStandardRelay } from '../helpers/standard-relay.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

/** The raw bytes of an sqlite database with its WAL, as an operator reading the disk has them. */
function rawDb(path: string): string {
  return [path, `${path}-wal`]
    .filter((p) => existsSync(p))
    .map((p) => readFileSync(p).toString('latin1'))
    .join('\n')
}

async function replyTo(home: string, question: string, kind = 9): Promise<ChatItem> {
  return (await threadedUnder(home, question, { kind }))[0]!
}

describe('end-to-end encrypted channels (kith-e2e/1, real processes)', { timeout: 240_000 }, () => {
  it("prompts, streamed answers, permission cards (with an edit's diff) and decisions reach the hub and a plain relay only as ciphertext", async () => {
    const dir = tempDir()
    const { hub, laptop, devbox } = await laptopAndDevbox(dir)
    const added = await setupKith(['agent', 'add', 'claude', '--', process.execPath, fakeAgent], {
      home: devbox,
    })
    expect(added.code, added.stderr).toBe(0)
    const on = await runKith(['fleet', 'encrypt', 'on'], { home: laptop })
    expect(on.code, on.stderr).toBe(0)
    // A plain third-party relay as a second link (no AUTH, no grants: it stores what it gets).
    const relay = await startStandardRelay()
    for (const home of [laptop, devbox])
      expect((await setupKith(['hub', 'add', relay.url], { home })).code).toBe(0)
    const nd = await startNodeProcess(devbox)
    const nl = await startNodeProcess(laptop)
    await nd.waitFor(new RegExp(`linked to ${hub.url}`))
    await nl.waitFor(new RegExp(`linked to ${hub.url}`))
    // The devbox learns the fleet's setting from the hub before it answers anything.
    await expect
      .poll(async () => (await runKith(['fleet', 'encrypt', '--json'], { home: devbox })).stdout, {
        timeout: 20_000,
      })
      .toMatch(/"encrypt": true/)

    const q1 = await ask(laptop, '@claude echo zebra-quartz-answer')
    expect((await replyTo(laptop, q1)).event.content).toBe('zebra-quartz-answer')
    // The devbox's session report is sealed too; the laptop opens it and lists the session.
    await expect
      .poll(
        async () =>
          (
            JSON.parse((await runKith(['session', 'list', '--json'], { home: laptop })).stdout) as {
              sessions: { thread?: string; title?: string }[]
            }
          ).sessions.find((s) => s.thread === q1)?.title,
        { timeout: 20_000 },
      )
      .toBe('echo zebra-quartz-answer')
    const q2 = await ask(laptop, '@claude stream 3')
    expect((await replyTo(laptop, q2)).event.content).toBe('chunk 1 chunk 2 chunk 3')
    const q3 = await ask(laptop, '@claude permission rm -rf ocelot-vault')
    const card = await replyTo(laptop, q3, 4142)
    expect(JSON.parse(card.event.content)).toMatchObject({ title: 'rm -rf ocelot-vault' })
    const permit = await runKith(['permit', card.event.id.slice(0, 10), '1'], { home: laptop })
    expect(permit.code, permit.stderr).toBe(0)
    expect((await replyTo(laptop, q3)).event.content).toBe('permission: selected allow')
    // An edit's card carries its diff (sealed with the rest): kith permit shows it before anyone
    // answers, and --json has it as preview.
    const q4 = await ask(laptop, '@claude edit src/lynx-greeting.ts')
    const editCard = await replyTo(laptop, q4, 4142)
    const listed = await runKith(['permit', '--json'], { home: laptop })
    const open = (
      JSON.parse(listed.stdout) as { requests: { id: string; preview: string | null }[] }
    ).requests.find((r) => r.id === editCard.event.id)
    expect(open?.preview?.split('\n')).toEqual([
      '--- a/src/lynx-greeting.ts',
      '+++ b/src/lynx-greeting.ts',
      '@@ -1,2 +1,2 @@',
      '-const greeting = "hello wrold"',
      '+const greeting = "hello world"',
      ' export default greeting',
    ])
    const text = await runKith(['permit'], { home: laptop })
    expect(text.stdout).toContain('│ -const greeting = "hello wrold"')
    expect(text.stdout).toContain('│ +const greeting = "hello world"')
    expect(
      (await runKith(['permit', editCard.event.id.slice(0, 10), '2'], { home: laptop })).code,
    ).toBe(0)
    expect((await replyTo(laptop, q4)).event.content).toMatch(/^Left `src\/lynx-greeting.ts`/)
    // The devbox read everything too: its own log of the channel is in the clear.
    expect((await history(devbox)).map((i) => i.event.content)).toContain(
      '@claude echo zebra-quartz-answer',
    )

    await nl.stop()
    await nd.stop()
    await hub.stop()
    relay.store.db.pragma('wal_checkpoint(TRUNCATE)')
    const relayFile = relay.store.db.name
    await relay.stop()
    const secrets = [
      'zebra-quartz',
      'ocelot-vault',
      'chunk 1',
      'permission: selected',
      'Allow once',
      'echo',
      'lynx-greeting',
      'hello wrold',
    ]
    for (const [what, file] of [
      ['hub', join(dir, 'hub.db')],
      ['plain relay', relayFile],
    ] as const) {
      const raw = rawDb(file)
      expect(raw, what).toContain('"e2e"')
      for (const s of secrets) expect(raw.includes(s), `${what} holds "${s}"`).toBe(false)
      // Replies and cards reveal no thread: no tag of any stored event names a prompt.
      const db = new Database(file, { readonly: true })
      const linked = db
        .prepare('SELECT count(*) AS n FROM tags WHERE value IN (?, ?, ?, ?)')
        .get(q1, q2, q3, q4) as { n: number }
      db.close()
      expect(linked.n, what).toBe(0)
    }
  })
})
