import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  agentActorClasses,
  authorityTable,
  mayAct,
  type Action,
  type ActorClass,
} from '../../src/grants/authority.js'
import {
  runKith,
  setupKith,
  startHubProcess,
  startNodeProcess,
  type NodeProcess,
} from '../helpers/cli.js'
import { endFileFixture, fileFixture } from '../helpers/cleanup.js'
import { history, post, threadedUnder } from '../helpers/node-chat.js'
import { init, pairUp } from '../helpers/pair-up.js'
import { tempDir } from '../helpers/tmp.js'

/**
 * The authority table's cells that run code on a machine, end to end through real `kith`
 * processes (issue 28, "Test the whole table"). One fleet for the file: Alice hosts two fake
 * agents (a real ACP process each, which appends every command it would have run to its
 * `--record` file), both with `--allow bob --approvers carol`; `runner` runs what it is asked
 * (`--permissions allow-all`), `asker` asks before every command. The actors: Alice's own
 * device (the owner), Bob (on --allow, not an approver), Carol (an approver, not on --allow),
 * Dave (a member with no standing) and Eve (removed). Each case is driven from the table: what
 * the actor may do is `mayAct` for the actor's classes, and what ran (the record) and what
 * Alice sees must say the same. Every row the host enforces has a case here or is named below
 * with where it is tested, so a new row fails this file until it has one.
 */
const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))
const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-C', cwd, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
    encoding: 'utf8',
  })

type Actor = 'alice' | 'bob' | 'carol' | 'dave' | 'eve'
const actors: Actor[] = ['alice', 'bob', 'carol', 'dave', 'eve']

/** Each actor's classes toward both agents, from the same function the host uses. */
function classesOf(actor: Actor): ActorClass[] {
  if (actor === 'eve') return agentActorClasses(facts('eve', undefined, true))
  return agentActorClasses(facts(actor, actor))
}
const keys: Record<string, string> = {
  alice: 'a'.repeat(64),
  bob: 'b'.repeat(64),
  carol: 'c'.repeat(64),
  dave: 'd'.repeat(64),
  eve: 'e'.repeat(64),
}
function facts(actor: Actor, person: Actor | undefined, wasMember = false) {
  return {
    key: keys[actor]!,
    person: person === undefined ? undefined : keys[person],
    wasMember,
    agentOwner: keys.alice,
    agentKey: 'f'.repeat(64),
    allow: [keys.bob!],
    approvers: [keys.carol!],
  }
}

/** Host rows not run here, and where they are. */
const elsewhere: Partial<Record<Action, string>> = {
  'card.request': 'only the agent itself signs a card (test/e2e/agent-binding.test.ts)',
  'session.close': 'test/e2e/session-policy.test.ts (close needs the approvers policy)',
}

interface Fleet {
  dir: string
  homes: Record<Actor, string>
  nodes: Partial<Record<Actor, NodeProcess>>
  aliceNode: NodeProcess
  startsRan: string
  cardsRan: string
}
let f: Fleet

const recorded = (file: string): string[] =>
  existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []

beforeAll(() => fileFixture(setUp), 300_000)
afterAll(endFileFixture)

async function setUp(): Promise<void> {
  const dir = tempDir()
  const homes = Object.fromEntries(actors.map((a) => [a, join(dir, a)])) as Record<Actor, string>
  await init(homes.alice, 'alice-box')
  const hub = await startHubProcess(['--db', join(dir, 'hub.db')], homes.alice)
  await setupKith(['hub', 'add', hub.url], { home: homes.alice })
  const owners: Partial<Record<Actor, string>> = {}
  for (const a of actors.slice(1)) {
    await init(homes[a], `${a}-laptop`)
    await pairUp(homes.alice, ['fleet', 'invite', '--name', a], homes[a], ['fleet', 'join'])
    const who = await runKith(['whoami', '--json'], { home: homes[a] })
    owners[a] = (JSON.parse(who.stdout) as { ownerHex: string }).ownerHex
  }
  const startsRan = join(dir, 'starts-ran')
  const cardsRan = join(dir, 'cards-ran')
  for (const [name, permissions, record] of [
    ['runner', 'allow-all', startsRan],
    ['asker', 'ask', cardsRan],
  ] as const) {
    const add = await setupKith(
      [
        'agent',
        'add',
        name,
        '--allow',
        owners.bob!,
        '--approvers',
        owners.carol!,
        '--permissions',
        permissions,
        '--',
        process.execPath,
        fakeAgent,
        '--modes',
        '--models',
        '--reject-always',
        '--record',
        record,
      ],
      { home: homes.alice },
    )
    expect(add.code, add.stderr).toBe(0)
  }
  const repo = join(tempDir(), 'repo')
  mkdirSync(repo)
  git(repo, 'init', '-q', '-b', 'main')
  writeFileSync(join(repo, 'README.md'), 'hello\n')
  git(repo, 'add', '.')
  git(repo, 'commit', '-q', '-m', 'first')
  const project = await setupKith(['project', 'add', 'work', repo, '--worktrees'], {
    home: homes.alice,
  })
  expect(project.code, project.stderr).toBe(0)
  // Eve is removed before anything starts: her node holds the revocation from its first link.
  const remove = await runKith(['fleet', 'remove', 'eve', '--yes'], { home: homes.alice })
  expect(remove.code, remove.stderr + remove.stdout).toBe(0)
  const nodes: Partial<Record<Actor, NodeProcess>> = {}
  for (const a of actors) {
    nodes[a] = await startNodeProcess(homes[a])
    if (a !== 'eve') await nodes[a].waitFor(/linked to/)
  }
  f = { dir, homes, nodes, aliceNode: nodes.alice!, startsRan, cardsRan }
}

/** What one actor's attempt at one cell came to: whether it ran, as Alice's side shows it. */
type Cell = (actor: Actor, tag: string) => Promise<boolean>

/**
 * A session start with these flags: it runs its prompt (`run TAG`, recorded by runner) or is
 * refused with a reason; Eve's node may not even send it.
 */
const start =
  (flags: string[]): Cell =>
  async (actor, tag) => {
    const r = await runKith(['session', 'new', 'runner', ...flags, `run ${tag}`], {
      home: f.homes[actor],
    })
    if (r.code !== 0) {
      if (actor !== 'eve') expect(r.stderr).toMatch(/⚠ runner (did not start|does not take)/)
      return recorded(f.startsRan).includes(tag)
    }
    await expect.poll(() => recorded(f.startsRan).includes(tag), { timeout: 60_000 }).toBe(true)
    return true
  }

/** A prompt: a top-level mention runs `run TAG`, or is refused in its thread. */
const prompt: Cell = async (actor, tag) => {
  if (actor === 'eve') {
    const r = await runKith(['send', '#ops', `@runner run ${tag}`], { home: f.homes.eve })
    expect(r.code).not.toBe(0)
    return recorded(f.startsRan).includes(tag)
  }
  const q = await post(f.homes[actor], 'ops', `@runner run ${tag}`)
  const [reply] = await threadedUnder(f.homes.alice, q, { timeout: 60_000 })
  if (/^⚠/.test(reply!.event.content)) {
    expect(reply!.event.content).toMatch(/does not take prompts from/)
    return recorded(f.startsRan).includes(tag)
  }
  expect(reply!.event.content).toBe(`ran: ${tag}`)
  return recorded(f.startsRan).includes(tag)
}

/** A broadcast to runner: each receipt says answered or refused. */
const broadcast: Cell = async (actor, tag) => {
  const r = await runKith(
    ['broadcast', '#ops', `run ${tag}`, '--agents', 'runner', '--json', '--wait', '60'],
    { home: f.homes[actor] },
  )
  if (actor === 'eve') {
    expect(r.code).not.toBe(0)
    return recorded(f.startsRan).includes(tag)
  }
  const receipt = (JSON.parse(r.stdout) as { receipts: { status: string }[] }).receipts[0]!
  expect(['answered', 'refused']).toContain(receipt.status)
  return receipt.status === 'answered' && recorded(f.startsRan).includes(tag)
}

/** `kith session set --mode acceptEdits` on a session Alice started; she asks its mode after. */
const setMode: Cell = async (actor) => {
  const started = await runKith(['session', 'new', 'runner', '--project', 'work', 'mode'], {
    home: f.homes.alice,
  })
  expect(started.code, started.stderr).toBe(0)
  const id = /^session ([0-9a-f]{12})/.exec(started.stdout)![1]!
  const list = await runKith(['session', 'list', '--json'], { home: f.homes.alice })
  const thread = (
    JSON.parse(list.stdout) as { sessions: { id: string; thread?: string }[] }
  ).sessions.find((s) => s.id === id)!.thread!
  const set = await runKith(['session', 'set', id, '--mode', 'acceptEdits'], {
    home: f.homes[actor],
  })
  if (actor !== 'eve' && set.code !== 0) expect(set.stdout).toMatch(/⚠ you may not change/)
  const asked = await runKith(['send', '#ops', '@runner mode', '--json', '--reply', thread], {
    home: f.homes.alice,
  })
  const askId = (JSON.parse(asked.stdout) as { id: string }).id
  const [reply] = await threadedUnder(f.homes.alice, askId, { timeout: 60_000 })
  return reply!.event.content.startsWith('mode: acceptEdits')
}

/**
 * A card from asker (Alice prompts `run TAG`), answered by the actor with `word`. Whatever the
 * actor did, Alice then rejects what is still open, so a command is recorded only when the
 * actor's answer was acted on.
 */
const decide =
  (word: 'allow' | 'always' | 'reject' | 'reject-always'): Cell =>
  async (actor, tag) => {
    const q = await post(f.homes.alice, 'ops', `@asker run ${tag}`)
    const [card] = await threadedUnder(f.homes.alice, q, { kind: 4142, timeout: 60_000 })
    // The fake agent's reject_always option is `never` (--reject-always).
    const option = word === 'reject-always' ? 'never' : word
    const answer = await runKith(['permit', card!.event.id, option], { home: f.homes[actor] })
    let actedOn = false
    if (actor !== 'eve') {
      expect(answer.code, answer.stderr + answer.stdout).toBe(0)
      const [first] = await threadedUnder(f.homes.alice, q, { timeout: 60_000 })
      actedOn = !/^⚠/.test(first!.event.content)
      if (!actedOn) expect(first!.event.content).toMatch(/may not approve asker's tool calls/)
    }
    if (!actedOn) {
      const cleanup = await runKith(['permit', card!.event.id, 'reject'], { home: f.homes.alice })
      expect(cleanup.code, cleanup.stderr + cleanup.stdout).toBe(0)
    }
    // The turn's own answer: what it did with the command.
    const outcome = async () =>
      (await history(f.homes.alice)).find(
        (i) =>
          i.event.kind === 9 &&
          i.event.tags.some((t) => t[0] === 'e' && t[1] === q) &&
          /^(ran|not run)/.test(i.event.content),
      )?.event.content
    await expect.poll(outcome, { timeout: 60_000 }).toBeDefined()
    const ran = recorded(f.cardsRan).includes(tag)
    expect(ran).toBe((await outcome())!.startsWith('ran:'))
    // A reject acted on is seen by what it answered: not Alice's cleanup.
    return word.startsWith('reject') ? actedOn : ran
  }

/**
 * A turn of asker's that waits on its card (Alice prompts `run TAG` in a channel of its own), so
 * it is running for as long as the card is open; the actor tries to stop it with `act`, and
 * `heard` waits for what Alice's node made of it: acted on (true) or refused (false). Then Alice
 * cancels whatever still runs, and the command never ran.
 */
const stopTurn =
  (
    act: (actor: Actor, channel: string, q: string) => Promise<void>,
    heard: (actor: Actor, channel: string, q: string) => Promise<boolean>,
  ): Cell =>
  async (actor, tag) => {
    const channel = tag.replace(/[^a-z0-9-]/g, '-')
    const q = await post(f.homes.alice, channel, `@asker run ${tag}`)
    await expect
      .poll(
        async () =>
          (await history(f.homes.alice, channel)).some(
            (i) => i.event.kind === 4142 && i.event.tags.some((t) => t[0] === 'e' && t[1] === q),
          ),
        { timeout: 60_000 },
      )
      .toBe(true)
    if (actor !== 'eve') {
      // The actor's node knows the turn (a cancel or interrupt names the turns it knows).
      await expect
        .poll(async () => (await history(f.homes[actor], channel)).some((i) => i.event.id === q), {
          timeout: 60_000,
        })
        .toBe(true)
    }
    await act(actor, channel, q)
    // Eve's node cannot reach the fleet: nothing of hers arrives to wait for.
    const acted = actor === 'eve' ? false : await heard(actor, channel, q)
    const outcome = async () =>
      (await history(f.homes.alice, channel)).find(
        (i) =>
          i.event.tags.some((t) => t[0] === 'e' && t[1] === q) &&
          /^not run|^ran:/.test(i.event.content),
      )?.event.content
    // Acted on, the turn was stopped then; refused, it still waits on its card until Alice stops it.
    if (!acted) {
      const stop = await runKith(['cancel', `#${channel}`, 'asker'], { home: f.homes.alice })
      expect(stop.code, stop.stderr + stop.stdout).toBe(0)
      await expect.poll(outcome, { timeout: 60_000 }).toMatch(/^not run/)
    }
    expect(recorded(f.cardsRan)).not.toContain(tag)
    return acted
  }

const cancel = stopTurn(
  async (actor, channel) => {
    const r = await runKith(['cancel', `#${channel}`, 'asker'], { home: f.homes[actor] })
    if (actor !== 'eve') expect(r.code, r.stderr + r.stdout).toBe(0)
  },
  async (actor, channel) =>
    /cancelling/.test(
      await f.aliceNode.waitFor(
        new RegExp(
          `(cancelling asker's turn in #${channel}|ignored a cancel for asker in #${channel} from ${actor})`,
        ),
        60_000,
      ),
    ),
)

const interrupt = stopTurn(
  async (actor, channel, q) => {
    const r = await runKith(
      ['send', `#${channel}`, '@asker echo instead', '--interrupt', '--reply', q],
      { home: f.homes[actor] },
    )
    if (actor !== 'eve') expect(r.code, r.stderr + r.stdout).toBe(0)
  },
  async (actor, channel, q) => {
    // Acted on: Alice's node interrupts. Refused in the thread: the prompt itself (not on
    // --allow), or only the interrupt (its prompt queued).
    const said = async () => {
      if (f.aliceNode.lines.some((l) => l.includes(`interrupting asker's turn in #${channel}`)))
        return 'interrupted'
      const refusal = (await history(f.homes.alice, channel)).find(
        (i) =>
          i.event.tags.some((t) => t[0] === 'e' && t[1] === q) &&
          /^⚠ .*(may not interrupt|does not take prompts from)/.test(i.event.content),
      )
      return refusal === undefined ? undefined : 'refused'
    }
    await expect.poll(said, { timeout: 60_000 }).toBeDefined()
    return (await said()) === 'interrupted'
  },
)

const cells: Partial<Record<Action, { also: Action[]; run: Cell }>> = {
  'agent.cancel': { also: [], run: cancel },
  'agent.interrupt': { also: ['agent.prompt'], run: interrupt },
  'agent.prompt': { also: [], run: prompt },
  'agent.broadcast': { also: [], run: broadcast },
  'session.start.project': { also: [], run: start(['--project', 'work']) },
  'session.start.worktree': {
    also: ['session.start.project'],
    run: start(['--project', 'work', '--worktree']),
  },
  'session.start.mode': {
    also: ['session.start.project'],
    run: start(['--project', 'work', '--mode', 'plan']),
  },
  'session.start.model': {
    also: ['session.start.project'],
    run: start(['--project', 'work', '--model', 'fake-small']),
  },
  'session.set': { also: [], run: setMode },
  'card.decide.allow_once': { also: [], run: decide('allow') },
  'card.decide.allow_always': { also: [], run: decide('always') },
  'card.decide.reject_once': { also: [], run: decide('reject') },
  'card.decide.reject_always': { also: [], run: decide('reject-always') },
}

const hostRows = authorityTable.filter((r) => r.enforcedBy.includes('host'))

describe('the authority table, cell by cell, through kith processes', () => {
  it('has a case (or a named place) for every row the host enforces', () => {
    for (const row of hostRows)
      expect({
        action: row.action,
        covered: row.action in cells || row.action in elsewhere,
      }).toEqual({ action: row.action, covered: true })
  })

  for (const row of hostRows) {
    const cell = cells[row.action]
    if (cell === undefined) continue
    it(
      `${row.action}: what ran is what the table allows each actor`,
      { timeout: 600_000 },
      async () => {
        const got: Record<string, boolean> = {}
        const want: Record<string, boolean> = {}
        for (const actor of actors) {
          const classes = classesOf(actor)
          want[actor] = [row.action, ...cell.also].every((a) => mayAct(a, classes))
          got[actor] = await cell.run(actor, `${row.action}-${actor}`)
        }
        expect(got).toEqual(want)
      },
    )
  }
})
