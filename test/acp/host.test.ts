import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it, onTestFinished } from 'vitest'
import { AgentHost, type HostOptions } from '../../src/acp/host.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

function host(opts: HostOptions = {}) {
  const dir = tempDir()
  const h = new AgentHost(
    'fake',
    { argv: [process.execPath, fakeAgent], cwd: dir, logPath: join(dir, 'fake.log') },
    () => undefined,
    opts,
  )
  onTestFinished(() => h.stop())
  return h
}

type Outcome = { ok: true; text: string } | { ok: false; reason: string; message: string }

function prompt(h: AgentHost, text: string, channel = 'ops', thread?: string): Promise<Outcome> {
  return new Promise((resolve) =>
    h.enqueue({
      channel,
      ...(thread === undefined ? {} : { thread }),
      text,
      done: resolve,
      permission: () => Promise.resolve('cancelled'),
    }),
  )
}

describe('AgentHost (a real fake-agent process over ACP)', () => {
  it('runs one turn at a time per channel, in order', async () => {
    const h = host()
    const replies = await Promise.all(['echo 1', 'echo 2', 'echo 3'].map((t) => prompt(h, t)))
    expect(replies).toEqual([
      { ok: true, text: '1' },
      { ok: true, text: '2' },
      { ok: true, text: '3' },
    ])
    expect(h.state).toBe('idle')
    expect(h.info).toEqual({ name: 'kith-fake-agent', version: '1.0.0' })
  })

  it('runs two threads of one channel side by side, each its own session', async () => {
    const h = host()
    // Thread a's turn waits for a cancel; thread b's answers meanwhile (it would wait forever
    // behind a with one turn at a time per channel).
    const hung = prompt(h, 'hang', 'ops', 'a')
    await expect
      .poll(() => h.runningIn({ channel: 'ops', thread: 'a' }), { timeout: 15_000 })
      .toBeDefined()
    expect(await prompt(h, 'echo b', 'ops', 'b')).toEqual({ ok: true, text: 'b' })
    expect(h.busyIn('ops')).toBe(true)
    expect(h.runningInChannel('ops').map((j) => j.thread)).toEqual(['a'])
    expect(h.cancel({ channel: 'ops', thread: 'a' })).toBe(true)
    expect(await hung).toMatchObject({ ok: false, reason: 'cancelled' })
    // The main thread is another session again.
    expect(await prompt(h, 'echo main')).toEqual({ ok: true, text: 'main' })
    expect(h.crashes).toBe(0)
  })

  it('closes a session with ACP session/close where advertised, never while a turn runs there', async () => {
    const dir = tempDir()
    const make = (flags: string[]) => {
      const h = new AgentHost(
        'fake',
        { argv: [process.execPath, fakeAgent, ...flags], cwd: dir, logPath: join(dir, 'f.log') },
        () => undefined,
      )
      onTestFinished(() => h.stop())
      return h
    }
    const h = make(['--close'])
    expect(await prompt(h, 'echo a', 'ops', 'a')).toEqual({ ok: true, text: 'a' })
    const hung = prompt(h, 'hang', 'ops', 'b')
    await expect
      .poll(() => h.runningIn({ channel: 'ops', thread: 'b' }), { timeout: 15_000 })
      .toBeDefined()
    await expect(h.close({ channel: 'ops', thread: 'b' })).rejects.toMatchObject({
      reason: 'busy',
    })
    expect(await h.close({ channel: 'ops', thread: 'a' })).toBe('closed')
    expect(await h.close({ channel: 'ops', thread: 'a' })).toBe('not-open')
    h.cancel({ channel: 'ops', thread: 'b' })
    await hung
    const plain = make([])
    expect(await prompt(plain, 'echo a', 'ops', 'a')).toEqual({ ok: true, text: 'a' })
    // Its turn is told its end just before the session is free again.
    await expect.poll(() => plain.busyIn('ops'), { timeout: 15_000 }).toBe(false)
    expect(await plain.close({ channel: 'ops', thread: 'a' })).toBe('no-close')
  })

  it('opens the circuit breaker after 3 crashes within a minute, and says so', async () => {
    const h = host({ respawnBaseMs: 10 })
    for (let i = 0; i < 3; i++) {
      expect(await prompt(h, 'crash')).toEqual({
        ok: false,
        reason: 'crashed',
        message: expect.stringMatching(/^agent crashed/) as string,
      })
    }
    expect(h.state).toBe('circuit-open')
    expect(await prompt(h, 'echo hi')).toEqual({
      ok: false,
      reason: 'circuit-open',
      message: expect.stringMatching(/^circuit open: it crashed 3 times in a minute/) as string,
    })
    expect(h.crashes).toBe(3)
  })

  it('reports a command that cannot start', async () => {
    const dir = tempDir()
    const h = new AgentHost(
      'missing',
      { argv: [join(dir, 'no-such-agent')], cwd: dir, logPath: join(dir, 'x.log') },
      () => undefined,
    )
    expect(await prompt(h, 'hello')).toEqual({
      ok: false,
      reason: 'cannot-start',
      message: expect.stringMatching(/cannot start/) as string,
    })
  })
})

describe('AgentHost watchdog', () => {
  it('ends a turn with no output past the idle timeout, and one past the hard cap', async () => {
    const idle = host({ idleTimeoutMs: 300 })
    expect(await prompt(idle, 'hang hard')).toEqual({
      ok: false,
      reason: 'timeout',
      message: expect.stringMatching(/^timed out: no output from the agent/) as string,
    })
    expect(await prompt(idle, 'echo after')).toEqual({ ok: true, text: 'after' })
    const capped = host({ turnCapMs: 300, idleTimeoutMs: 60_000 })
    expect(await prompt(capped, 'hang')).toEqual({
      ok: false,
      reason: 'timeout',
      message: expect.stringMatching(/^timed out: the turn ran past its/) as string,
    })
  })
})

describe('AgentHost cancel', () => {
  it('kills only the cancelled turn: a new turn in the same session survives the old grace timer', async () => {
    const h = host()
    const first = prompt(h, 'hang')
    await expect.poll(() => h.state, { timeout: 15_000 }).toBe('working')
    expect(h.cancel({ channel: 'ops' }, 300)).toBe(true)
    expect(await first).toEqual({ ok: false, reason: 'cancelled', message: 'turn cancelled' })
    // Started well inside the first cancel's grace window, and still running after it (its
    // permission answer takes 600 ms): the old timer must not kill it.
    const second = new Promise<Outcome>((resolve) =>
      h.enqueue({
        channel: 'ops',
        text: 'permission slow',
        done: resolve,
        permission: () => new Promise((r) => setTimeout(() => r({ optionId: 'allow' }), 600)),
      }),
    )
    expect(await second).toEqual({ ok: true, text: 'permission: selected allow' })
    expect(h.crashes).toBe(0)
  })
})
