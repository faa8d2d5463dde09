// gemini-cli (@google/gemini-cli, `gemini --acp`, pinned in test/agents/pinned), hosted by a real
// devbox node and prompted from a real laptop node, with the loopback mock model standing in for
// the Gemini API (GOOGLE_GEMINI_BASE_URL, a dummy GEMINI_API_KEY passed through with --env).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { verifyEventSignature } from '../../src/events/event.js'
import { verifyAuthTag } from '../../src/grants/nip-oa.js'
import { pinnedFile, processesIn, startFleet, status } from './fleet.js'
import { startMockModel, type MockModel } from './mock-model.js'

// The bundled CLI (the package's `gemini` bin), run by this Node.
const gemini = () => pinnedFile('@google', 'gemini-cli', 'bundle', 'gemini.js')

let model: MockModel
beforeAll(async () => {
  model = await startMockModel()
})
afterAll(async () => {
  await model.close()
})

describe('gemini-cli@0.61.0 with a loopback model', { timeout: 150_000 }, () => {
  it('answers an @gemini prompt from the laptop with the model text, signed by the agent key, and answers again after a restart', async () => {
    model.respond((req) =>
      req.lastUserText.includes('what is the build status')
        ? { text: 'The build is green (mock Gemini).' }
        : { text: 'unexpected request' },
    )
    const fleet = await startFleet({
      name: 'gemini',
      command: [process.execPath, gemini(), '--acp', '-m', 'gemini-2.5-flash'],
      env: { GOOGLE_GEMINI_BASE_URL: model.origin, GEMINI_API_KEY: 'dummy' },
    })
    const q = await fleet.ask('@gemini what is the build status?')
    const reply = await fleet.threaded(q)
    expect(reply.event.content).toBe('The build is green (mock Gemini).')
    expect(reply.event.pubkey).toBe(fleet.agentPubkey)
    expect(verifyEventSignature(reply.event)).toBe(true)
    expect(verifyAuthTag(reply.event)).toMatch(/^[0-9a-f]{64}$/)
    expect(reply.from).toMatchObject({ name: 'gemini', role: 'agent' })
    expect(reply.event.tags).toContainEqual(['e', q, '', 'root'])

    // What gemini sent the model: the prompt (without the @mention) to the streaming endpoint of
    // the model named on its command line; nothing else reached the mock.
    expect(model.requests.filter((r) => r.api !== 'gemini')).toEqual([])
    const asked = model.requests.at(-1)!
    expect(asked.method).toBe('POST')
    expect(asked.path).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent')
    expect(asked.lastUserText).toContain('what is the build status?')
    expect(asked.lastUserText).not.toContain('@gemini')
    expect(asked.tools.length).toBeGreaterThan(0)

    expect((await status(fleet.devbox)).agents).toEqual([
      expect.objectContaining({
        name: 'gemini',
        adapter: { name: 'gemini-cli', version: '0.61.0' },
      }),
    ])

    // A second turn in the same thread reuses the session: gemini sends the earlier exchange.
    model.respond(() => ({ text: 'second answer' }))
    const q2 = await fleet.ask('@gemini and now?', q)
    expect((await fleet.threaded(q2)).event.content).toBe('second answer')
    expect(JSON.stringify(model.requests.at(-1)!.body)).toContain(
      'The build is green (mock Gemini).',
    )

    // After a restart the node tries to resume the session with session/load (gemini advertises
    // it). gemini-cli 0.61.0 keeps a session in HOME/.gemini/tmp/<project>/chats/session-<UTC
    // minute it was started>-<id prefix>.jsonl, and session/load first starts a new record for
    // the id: in the minute the session was started that lands in the same file and empties the
    // session ("No previous sessions found for this project."), later it is a file of its own
    // and the load succeeds. Either way the channel gets its answer, and a failed resume is said.
    await fleet.restartDevbox()
    model.respond(() => ({ text: 'third answer' }))
    const q3 = await fleet.ask('@gemini still there?', q)
    expect((await fleet.threaded(q3)).event.content).toBe('third answer')
    // The restarted node logs which it was: a resumed session, or a new one pinned to a mode.
    const opened = await fleet.devboxNode.waitFor(/agent gemini: (resumed|pinned) session/)
    const notices = async () =>
      (await fleet.history())
        .map((i) => i.event.content)
        .filter((c) => c.includes('started a new session'))
    if (opened.includes('resumed session')) {
      expect(await notices()).toEqual([])
      expect(JSON.stringify(model.requests.at(-1)!.body)).toContain(
        'The build is green (mock Gemini).',
      )
    } else {
      await expect
        .poll(notices, { timeout: 30_000 })
        .toEqual([
          `ℹ gemini started a new session in #ops (thread ${q.slice(0, 8)}): the agent could not resume it (agent error: Internal error: No previous sessions found for this project.)`,
        ])
    }
    // What the agent replayed while loading is never posted again.
    const contents = (await fleet.history()).map((i) => i.event.content)
    expect(contents.filter((c) => c === 'The build is green (mock Gemini).')).toHaveLength(1)

    // Stopped as a person stops it (SIGTERM), the node stops its agent: nothing is left running
    // in the agent's directory.
    expect(processesIn(fleet.agentCwd).length).toBeGreaterThan(0)
    await fleet.stop()
    expect(processesIn(fleet.agentCwd)).toEqual([])
    // Whatever gemini printed besides the protocol went to the agent's log, not the channel:
    const log = readFileSync(join(fleet.devbox, 'agents', 'gemini.log'), 'utf8')
    // gemini keeps stdout to the protocol; its chatter (folder trust, ripgrep, a failed load's
    // stack) goes to stderr, which is the log too.
    expect(log).not.toContain('[non-JSON stdout]')
    expect(log).toContain('Ripgrep is not available')
  })
})
