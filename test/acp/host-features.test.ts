import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it, onTestFinished } from 'vitest'
import type { PermissionAnswer, PermissionAsk } from '../../src/acp/agent-process.js'
import {
  AgentHost,
  type HostOptions,
  type PromptJob,
  type SessionPlace,
} from '../../src/acp/host.js'
import { NodeStore } from '../../src/store/node-store.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

type Outcome = Parameters<PromptJob['done']>[0]

/** A host of the fake agent started with `flags`; its log lines are collected. */
function host(flags: string[], opts: HostOptions = {}, dir = tempDir()) {
  const lines: string[] = []
  const h = new AgentHost(
    'fake',
    { argv: [process.execPath, fakeAgent, ...flags], cwd: dir, logPath: join(dir, 'fake.log') },
    (l) => lines.push(l),
    opts,
  )
  onTestFinished(() => h.stop())
  return { h, lines }
}

/** The real node.db session store, as the daemon uses it. */
function sessionStore(dir: string) {
  const store = new NodeStore(dir)
  onTestFinished(() => store.close())
  return {
    store,
    sessions: {
      get: (place: SessionPlace) => store.agentSession('fake', place),
      set: (place: SessionPlace, s: Parameters<NodeStore['setAgentSession']>[2]) =>
        store.setAgentSession('fake', place, s),
    },
  }
}

function prompt(
  h: AgentHost,
  text: string,
  extra: Partial<Omit<PromptJob, 'done' | 'text'>> = {},
): Promise<Outcome> {
  return new Promise((resolve) =>
    h.enqueue({
      channel: 'ops',
      permission: () => Promise.resolve('cancelled'),
      ...extra,
      text,
      done: resolve,
    }),
  )
}

describe('session mode pinned at creation', () => {
  it('pins the asking mode (default) over an inherited bypass mode, and persists it', async () => {
    const dir = tempDir()
    const { store, sessions } = sessionStore(dir)
    const { h, lines } = host(['--modes'], { sessions }, dir)
    expect(await prompt(h, 'mode')).toEqual({ ok: true, text: 'mode: default, model: none' })
    expect(lines).toContain('agent fake: pinned session fake-1 to mode default')
    expect(store.agentSession('fake', 'ops')).toEqual({
      sessionId: 'fake-1',
      cwd: dir,
      adapter: 'kith-fake-agent',
      version: '1.0.0',
      mode: 'default',
      // Its first prompt's first line.
      title: 'mode',
    })
  })

  it('records an agent without session/set_mode (-32601) and goes on', async () => {
    const { h, lines } = host(['--modes', '--no-set-mode'])
    expect(await prompt(h, 'echo still works')).toEqual({ ok: true, text: 'still works' })
    expect(lines).toContain(
      'agent fake: the agent has no session/set_mode (-32601); going on without it',
    )
  })

  it('sets no mode on an agent that advertises none', async () => {
    const { h, lines } = host([])
    expect(await prompt(h, 'mode')).toEqual({ ok: true, text: 'mode: none, model: none' })
    expect(lines.filter((l) => /mode/.test(l))).toEqual([])
  })
})

describe('mode and model re-applied after session/load', () => {
  for (const flag of ['--model-option', '--models']) {
    it(`restores both on a resumed session (${flag})`, async () => {
      const dir = tempDir()
      const { store, sessions } = sessionStore(dir)
      const first = host(['--modes', flag], { sessions }, dir)
      expect(await prompt(first.h, 'mode')).toEqual({
        ok: true,
        text: 'mode: default, model: fake-large',
      })
      expect(store.agentSession('fake', 'ops')).toMatchObject({
        mode: 'default',
        model:
          flag === '--models'
            ? { value: 'fake-large' }
            : { value: 'fake-large', configId: 'model' },
      })
      await first.h.stop()
      // A new process (a restarted node): the agent forgets mode and model on load.
      const second = host(['--modes', flag], { sessions }, dir)
      expect(await prompt(second.h, 'mode')).toEqual({
        ok: true,
        text: 'mode: default, model: fake-large',
      })
      expect(second.lines).toContain('agent fake: resumed session fake-1 for #ops')
    })
  }
})

describe('per-agent auto-allow by tool kind', () => {
  /** Runs `script` and reports whether a person was asked, and what the observer saw. */
  async function run(h: AgentHost, script: string) {
    const asked: PermissionAsk[] = []
    const updates: unknown[] = []
    const outcome = await prompt(h, script, {
      permission: (ask): Promise<PermissionAnswer> => {
        asked.push(ask)
        return Promise.resolve({ optionId: 'reject' })
      },
      update: (u) => updates.push(u),
    })
    return { outcome, asked, updates }
  }

  it('allow-reads: a read is allowed at once (allow_once, chosen by kind), visibly; an edit asks', async () => {
    const { h, lines } = host([], { permissions: 'allow-reads' })
    for (const kind of ['read', 'search', 'think', 'fetch']) {
      const r = await run(h, `permission-${kind} look at src`)
      expect(r.outcome).toEqual({ ok: true, text: 'permission: selected allow' })
      expect(r.asked).toEqual([])
      expect(r.updates).toContainEqual({
        sessionUpdate: 'kith_auto_allowed',
        toolCallId: 'tool-1',
        title: 'look at src',
        toolKind: kind,
        optionId: 'allow',
        policy: 'allow-reads',
      })
    }
    expect(lines).toContain(
      'agent fake: auto-allowed read "look at src" in #ops (permissions: allow-reads)',
    )
    for (const script of ['permission-edit main.ts', 'permission rm -rf build']) {
      const r = await run(h, script)
      expect(r.outcome).toEqual({ ok: true, text: 'permission: selected reject' })
      expect(r.asked).toHaveLength(1)
    }
  })

  it('allow-all allows every kind; ask (the default) asks for reads too', async () => {
    const all = host([], { permissions: 'allow-all' })
    const r = await run(all.h, 'permission-execute rm -rf build')
    expect(r.outcome).toEqual({ ok: true, text: 'permission: selected allow' })
    expect(r.asked).toEqual([])
    const ask = host([])
    const a = await run(ask.h, 'permission-read README.md')
    expect(a.outcome).toEqual({ ok: true, text: 'permission: selected reject' })
    expect(a.asked.map((x) => x.toolKind)).toEqual(['read'])
  })
})

describe('a message arriving mid-turn', () => {
  it('is steered into the running turn where the adapter advertises steering', async () => {
    const { h, lines } = host(['--steering'])
    let inTurn!: () => void
    const turnStarted = new Promise<void>((r) => (inTurn = r))
    const first = prompt(h, 'wait steer', {
      update: (u) => {
        if ((u as { sessionUpdate?: string }).sessionUpdate === 'agent_thought_chunk') inTurn()
      },
    })
    await turnStarted
    const second = prompt(h, 'also check the tests')
    expect(await second).toEqual({
      ok: true,
      text: '↪ added to the turn in progress',
      steered: true,
    })
    expect(await first).toEqual({
      ok: true,
      text: 'steered: also check the tests (idleBehavior promptRequired)',
    })
    expect(lines).toContain('agent fake: steered a message into the turn running in #ops')
    // Idle again: the next message is an ordinary turn.
    expect(await prompt(h, 'echo next')).toEqual({ ok: true, text: 'next' })
  })

  it('is queued (FIFO) where steering is not advertised', async () => {
    const { h } = host([])
    let asked!: (answer: PermissionAnswer) => void
    let inTurn!: () => void
    const turnStarted = new Promise<void>((r) => (inTurn = r))
    const first = prompt(h, 'permission-edit main.ts', {
      permission: () => {
        inTurn()
        return new Promise((r) => (asked = r))
      },
    })
    await turnStarted
    const second = prompt(h, 'echo second')
    const third = prompt(h, 'echo third')
    expect(h.queueDepth).toBe(2)
    asked({ optionId: 'allow' })
    expect(await first).toEqual({ ok: true, text: 'permission: selected allow' })
    expect(await second).toEqual({ ok: true, text: 'second' })
    expect(await third).toEqual({ ok: true, text: 'third' })
  })
})
