import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it, onTestFinished } from 'vitest'
import { decode } from 'nostr-tools/nip19'
import { signEvent, type NostrEvent } from '../../src/events/event.js'
import { readKeyFile } from '../../src/identity/key-file.js'
import type { ChatItem } from '../../src/node/chat-store.js'
import {
  runKith,
  setupKith,
  spawnKith,
  startNodeProcess,
  type NodeProcess,
} from '../helpers/cli.js'
import { ask, history, threadedUnder } from '../helpers/node-chat.js'
import { RawClient } from '../helpers/raw-client.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))
const now = () => Math.floor(Date.now() / 1000)

/** One machine (KITH_HOME `home`, fleet founded here) hosting the fake agent `bot`. */
async function box(addFlags: string[] = []): Promise<{
  home: string
  project: string
  node: NodeProcess
  fleet: string
  bot: string
  device: Uint8Array
  /** A raw client authenticated as `sk` (this machine's device key by default). */
  raw: (sk?: Uint8Array) => Promise<RawClient>
}> {
  const dir = tempDir()
  const home = join(dir, 'kith')
  const project = join(dir, 'project')
  mkdirSync(project)
  // Plain: the attackers here are raw clients signing cancels, cards and answers in the clear,
  // which a sealed fleet refuses outright (invalid: plaintext) before any binding is judged.
  expect((await setupKith(['init', '--name', 'box', '--plain'], { home })).code).toBe(0)
  const add = await runKith(
    ['agent', 'add', 'bot', '--cwd', project, ...addFlags, '--', process.execPath, fakeAgent],
    { home },
  )
  expect(add.code, add.stderr).toBe(0)
  const node = await startNodeProcess(home, ['--port', '0', '--cancel-grace', '1'])
  const url = /embedded hub on (ws:\/\/[^\s"]+)/.exec(await node.waitFor(/embedded hub on/))![1]!
  await node.waitFor(/linked to/)
  // A one-person fleet: its founder is this machine's owner key.
  const who = JSON.parse((await runKith(['whoami', '--json'], { home })).stdout) as {
    ownerHex: string
  }
  const agents = JSON.parse((await runKith(['agent', 'list', '--json'], { home })).stdout) as {
    agents: { name: string; npub: string }[]
  }
  const device = readKeyFile(join(home, 'device.key'))!
  return {
    home,
    project,
    node,
    fleet: who.ownerHex,
    bot: hexOfNpub(agents.agents[0]!.npub),
    device,
    raw: async (sk = device) => {
      const c = await RawClient.connect(url)
      onTestFinished(() => c.close())
      const ok = await c.auth(url, sk)
      expect(ok[2], String(ok[3])).toBe(true)
      return c
    },
  }
}

function hexOfNpub(npub: string): string {
  const d = decode(npub)
  if (d.type !== 'npub') throw new Error(`not an npub: ${npub}`)
  return d.data
}

async function publish(c: RawClient, event: NostrEvent): Promise<void> {
  c.send(['EVENT', event])
  const ok = await c.ok(event.id)
  expect(ok[2], String(ok[3])).toBe(true)
}

async function agentState(home: string): Promise<string | undefined> {
  const r = await runKith(['status', '--json'], { home })
  return (JSON.parse(r.stdout) as { agents: { state: string }[] }).agents[0]?.state
}

/** The first item in #ops whose content matches, once it has arrived. */
async function seen(home: string, pattern: RegExp): Promise<ChatItem> {
  let found: ChatItem | undefined
  await expect
    .poll(
      async () => {
        found = (await history(home)).find((i) => pattern.test(i.event.content))
        return found !== undefined
      },
      { timeout: 30_000 },
    )
    .toBe(true)
  return found!
}

describe('secrets are never read unasked (--permissions allow-reads)', { timeout: 120_000 }, () => {
  it('a read of KITH_HOME/owner.key asks, says why, and reads nothing until answered', async () => {
    const b = await box(['--permissions', 'allow-reads'])
    const ownerKey = readFileSync(join(b.home, 'owner.key'), 'utf8').trim()
    writeFileSync(join(b.project, 'README'), 'hello from the project')
    // A harmless-looking link in the project that leads into KITH_HOME.
    symlinkSync(b.home, join(b.project, 'vendor'))

    // An ordinary read is still allowed at once, without a card.
    const plain = await ask(b.home, `@bot read ${join(b.project, 'README')}`)
    expect((await threadedUnder(b.home, plain))[0]!.event.content).toMatch(
      /^read .*README: hello from the project$/,
    )

    for (const [command, path] of [
      [`read ${join(b.home, 'owner.key')}`, 'owner.key'],
      ['read vendor/owner.key', 'owner.key'],
      [`announced-read ${b.project}/../kith/device.key`, 'device.key'],
    ] as const) {
      const q = await ask(b.home, `@bot ${command}`)
      const card = (await threadedUnder(b.home, q, { kind: 4142 }))[0]!
      const content = JSON.parse(card.event.content) as { sensitive?: string; toolKind: string }
      expect(content.toolKind).toBe('read')
      expect(content.sensitive).toBe(`touches KITH_HOME/${path}: Kith's keys`)
      await b.node.waitFor(
        new RegExp(
          `touches KITH_HOME/${path}: Kith's keys; asking a person although permissions are allow-reads`,
        ),
      )
      // Nothing was read: the turn waits for a person.
      expect(await agentState(b.home)).toBe('awaiting-permission')
      const permit = await runKith(['permit', card.event.id, 'reject'], { home: b.home })
      expect(permit.code, permit.stderr).toBe(0)
      expect((await threadedUnder(b.home, q))[0]!.event.content).toBe('not read (reject)')
    }
    // The key never reached the channel.
    expect((await history(b.home)).some((i) => i.event.content.includes(ownerKey))).toBe(false)
    // kith chat shows why on the card.
    const chat = spawnKith(['chat', '#ops'], b.home)
    await chat.waitFor(
      /🔐 \[card \d+\] bot asks to run: Read .*owner\.key \(read\) {2}⚠ touches KITH_HOME\/owner\.key: Kith's keys/,
    )
    chat.write('/quit\n')
    expect(await chat.exit).toBe(0)
  })
})

describe(
  'cancels and interrupts bound to a turn, a fleet and a moment',
  { timeout: 120_000 },
  () => {
    it('a withheld, stale, unbound or foreign cancel stops no later turn; a bound one does', async () => {
      const b = await box()
      const first = await ask(b.home, '@bot echo first')
      await threadedUnder(b.home, first)
      const running = await ask(b.home, '@bot hang')
      await expect.poll(() => agentState(b.home), { timeout: 20_000 }).toBe('working')
      const c = await b.raw()
      const cancel = (tags: string[][], createdAt = now()) =>
        signEvent(
          {
            kind: 4144,
            created_at: createdAt,
            tags,
            content: JSON.stringify({ action: 'cancel' }),
          },
          b.device,
        )
      const base = [
        ['h', 'ops'],
        ['p', b.bot],
      ]

      // Made for the first turn and held back until the second runs: names no running turn.
      await publish(c, cancel([...base, ['fleet', b.fleet], ['e', first]]))
      await b.node.waitFor(/a cancel for bot in #ops names no turn running now; nothing stopped/)
      // Bound to this turn but made 10 minutes ago (withheld in an outbox, replayed later).
      await publish(c, cancel([...base, ['fleet', b.fleet], ['e', running]], now() - 600))
      await seen(
        b.home,
        /^⚠ bot ignored a cancel from box: it was made 10 min ago \(older than 5 min is not acted on\)$/,
      )
      // The older form (no fleet, no turn) and one naming no turn are refused, visibly.
      await publish(c, cancel(base))
      await seen(
        b.home,
        /^⚠ bot ignored a cancel from box: it names no fleet \(made by an older client\?\)$/,
      )
      await publish(c, cancel([...base, ['fleet', b.fleet]]))
      await seen(
        b.home,
        /^⚠ bot ignored a cancel from box: it names no turn \(made by an older client\?\)$/,
      )
      // Made for another fleet that shares this key: the hub refuses it (the node's intake runs
      // the same admission, for links that are plain relays).
      const foreign = cancel([...base, ['fleet', 'e'.repeat(64)], ['e', running]])
      c.send(['EVENT', foreign])
      expect((await c.ok(foreign.id))[3]).toBe(
        'restricted: wrong-fleet: its fleet tag names another fleet',
      )
      expect(await agentState(b.home)).toBe('working')
      expect(await threadedUnder(b.home, running, { count: 0 })).toEqual([])

      // A stale interrupt is queued as a plain prompt, and says so.
      const late = signEvent(
        {
          kind: 9,
          created_at: now() - 600,
          tags: [
            ['h', 'ops'],
            ['fleet', b.fleet],
            ['p', b.bot],
            ['interrupt', running],
          ],
          content: '@bot echo too late',
        },
        b.device,
      )
      await publish(c, late)
      expect((await threadedUnder(b.home, late.id))[0]!.event.content).toBe(
        '⚠ bot was not interrupted: it was made 10 min ago (older than 5 min is not acted on); your prompt is queued',
      )
      expect(await agentState(b.home)).toBe('working')

      // kith cancel names the open turns: it stops this one; then the queued prompt runs.
      const r = await runKith(['cancel', '#ops', 'bot'], { home: b.home })
      expect(r.code, r.stderr).toBe(0)
      expect(r.stdout).toMatch(/cancel sent to @bot in #ops \(for 2 open prompts\)/)
      expect((await threadedUnder(b.home, running))[0]!.event.content).toBe('⏹ bot: turn cancelled')
      const answers = await threadedUnder(b.home, late.id, { count: 2 })
      expect(answers.map((a) => a.event.content)).toContain('too late')
      // Nothing left open: a cancel now says so instead of sending one that names nothing.
      const none = await runKith(['cancel', '#ops'], { home: b.home })
      expect(none.code).toBe(5)
      expect(none.stderr).toMatch(/nothing to cancel in #ops/)
    })
  },
)

describe('permission cards bound to their call, channel and agent', { timeout: 120_000 }, () => {
  it('two identical calls make two cards; an answer from another channel, fleet or time approves nothing', async () => {
    const b = await box()
    const q = await ask(b.home, '@bot permission-twice deploy')
    const cards = await threadedUnder(b.home, q, { kind: 4142, count: 2 })
    expect(new Set(cards.map((c) => c.event.id)).size).toBe(2)
    const contents = cards.map(
      (c) =>
        JSON.parse(c.event.content) as { toolCallId: string; sessionId: string; input: string },
    )
    expect(contents.map((c) => c.toolCallId).sort()).toEqual(['tool-1', 'tool-2'])
    expect(contents[0]!.input).toMatch(/^[0-9a-f]{64}$/)
    expect(contents[0]!.input).toBe(contents[1]!.input)
    expect(contents[0]!.sessionId).toBe(contents[1]!.sessionId)
    for (const card of cards) expect(card.event.tags).toContainEqual(['fleet', b.fleet])
    const [one, two] = cards as [ChatItem, ChatItem]

    const c = await b.raw()
    const decision = (tags: string[][], createdAt = now()) =>
      signEvent(
        { kind: 4143, created_at: createdAt, tags, content: JSON.stringify({ optionId: 'allow' }) },
        b.device,
      )
    // A device capped to #dev can post decisions only there: such an answer approves nothing here.
    await publish(
      c,
      decision([
        ['e', one.event.id],
        ['h', 'dev'],
        ['p', b.bot],
        ['fleet', b.fleet],
      ]),
    )
    await seen(
      b.home,
      /^⚠ the answer of box to "deploy" was not acted on: it was posted in #dev, the request is in #ops; the request is still open$/,
    )
    await publish(
      c,
      decision([
        ['e', one.event.id],
        ['h', 'ops'],
        ['p', b.bot],
      ]),
    )
    await seen(b.home, /^⚠ the answer of box to "deploy" was not acted on: it names no fleet/)
    await publish(
      c,
      decision(
        [
          ['e', one.event.id],
          ['h', 'ops'],
          ['p', b.bot],
          ['fleet', b.fleet],
        ],
        now() - 600,
      ),
    )
    await seen(b.home, /^⚠ the answer of box to "deploy" was not acted on: it was made 10 min ago/)
    await publish(
      c,
      decision([
        ['e', one.event.id],
        ['h', 'ops'],
        ['p', 'e'.repeat(64)],
        ['fleet', b.fleet],
      ]),
    )
    await seen(b.home, /not acted on: it does not name the agent that asked \(its p tag\)/)
    expect(await agentState(b.home)).toBe('awaiting-permission')

    // Each card takes its own answer.
    expect((await runKith(['permit', one.event.id, '1'], { home: b.home })).code).toBe(0)
    expect((await runKith(['permit', two.event.id, 'reject'], { home: b.home })).code).toBe(0)
    const reply = (await threadedUnder(b.home, q)).find((i) =>
      i.event.content.startsWith('permission:'),
    )
    expect(reply?.event.content).toMatch(
      /^permission: selected (allow|reject), selected (allow|reject)$/,
    )
    expect(reply?.event.content).toContain('selected allow')
    expect(reply?.event.content).toContain('selected reject')
    // A second answer to a decided card is refused here, saying so.
    const again = await runKith(['permit', one.event.id, '2'], { home: b.home })
    expect(again.code).toBe(1)
    expect(again.stderr).toMatch(/it was already decided: Allow once \(by box\)/)
    // Another approver answering late (the owner key, from any client) is told it changed nothing.
    const owner = readKeyFile(join(b.home, 'owner.key'))!
    const fromOwner = await b.raw(owner)
    await publish(
      fromOwner,
      signEvent(
        {
          kind: 4143,
          created_at: now(),
          tags: [
            ['e', one.event.id],
            ['h', 'ops'],
            ['p', b.bot],
            ['fleet', b.fleet],
          ],
          content: JSON.stringify({ optionId: 'reject' }),
        },
        owner,
      ),
    )
    await seen(
      b.home,
      /^ℹ "deploy" was already decided: Allow once \(by box\); the answer of founder changed nothing$/,
    )
  })

  it('in kith chat, /allow N answers card N, says so, and a second answer says it was decided', async () => {
    const b = await box()
    const chat = spawnKith(['chat', '#ops'], b.home)
    await chat.waitFor(/── #ops ──/)
    chat.write('@bot permission rm -rf build\n')
    const n = (await chat.waitFor(/\[card (\d+)\] bot asks to run: rm -rf build \(execute\)/))[1]!
    chat.write(`/allow ${Number(n) + 1}\n`)
    await chat.waitFor(new RegExp(`no card ${Number(n) + 1} here`))
    chat.write(`/allow ${n}\n`)
    await chat.waitFor(new RegExp(`answered card ${n} \\(bot: rm -rf build\\) with Allow once`))
    await chat.waitFor(/bot \[agent, authorized by you\]: ↳ permission: selected allow/)
    chat.write(`/reject ${n}\n`)
    await chat.waitFor(
      new RegExp(
        `⚠ card ${n} not answered: request \\w{8} \\("rm -rf build"\\): it was already decided: Allow once \\(by box\\)`,
      ),
    )
    chat.write('/quit\n')
    expect(await chat.exit).toBe(0)
  })
})
