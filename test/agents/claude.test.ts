// claude-agent-acp (@zed-industries/claude-agent-acp, pinned in test/agents/pinned), hosted by a
// real devbox node and prompted from a real laptop node. Claude Code (which it runs) talks to the
// loopback mock model as it would to Anthropic's API: ANTHROPIC_BASE_URL at the mock, a dummy
// ANTHROPIC_API_KEY, both passed through with --env. Without a key it never reaches a model and
// says so (ACP -32000).
import { spawn } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { basename, join } from 'node:path'
import { Readable, Writable } from 'node:stream'
import * as acp from '@agentclientprotocol/sdk'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { verifyEventSignature } from '../../src/events/event.js'
import { verifyAuthTag } from '../../src/grants/nip-oa.js'
import { runKith } from '../helpers/cli.js'
import { startEndpoint } from '../helpers/push-service.js'
import {
  approveProofCall,
  pinnedFile,
  processesIn,
  proofTurn,
  startFleet,
  status,
} from './fleet.js'
import { startMockModel, type MockModel, type ModelRequest } from './mock-model.js'

const claudeAcp = () => pinnedFile('@zed-industries', 'claude-agent-acp', 'dist', 'index.js')

/** Session transcripts claude keeps under HOME/.claude/projects/<cwd>/<sessionId>.jsonl. */
function transcripts(home: string): string[] {
  const root = join(home, '.claude', 'projects')
  if (!existsSync(root)) return []
  return readdirSync(root).flatMap((project) =>
    readdirSync(join(root, project))
      .filter((f) => f.endsWith('.jsonl'))
      .map((f) => basename(f, '.jsonl')),
  )
}

let model: MockModel
beforeAll(async () => {
  model = await startMockModel()
})
afterAll(async () => {
  await model.close()
})

/** Claude Code's environment: its API at the mock, and nothing sent to Anthropic's own hosts. */
const towardsMock = () => ({
  ANTHROPIC_BASE_URL: model.origin,
  // No telemetry, error reports or update checks: the test stays on the loopback (what is left
  // is a plugin blocklist fetch from GitHub, which may fail without harm).
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
})

describe('claude-agent-acp@0.23.1 with a loopback model', { timeout: 150_000 }, () => {
  it('answers from the laptop, asks permission for its Bash tool call, and keeps its session across a node restart', async () => {
    model.respond((req) => {
      if (req.lastUserText.includes('what is the build status')) {
        return { text: 'The build is green (mock Claude).' }
      }
      if (req.lastUserText.includes('write the proof file')) return proofTurn('Bash', req)
      if (req.lastUserText.includes('still there')) return { text: 'Still here.' }
      return { text: 'unexpected request' }
    })
    const fleet = await startFleet({
      name: 'claude',
      command: [process.execPath, claudeAcp()],
      env: { ...towardsMock(), ANTHROPIC_API_KEY: 'not-a-key' },
    })
    const q1 = await fleet.ask('@claude what is the build status?')
    const r1 = await fleet.threaded(q1)
    expect(r1.event.content).toBe('The build is green (mock Claude).')
    expect(r1.event.pubkey).toBe(fleet.agentPubkey)
    expect(verifyEventSignature(r1.event)).toBe(true)
    expect(verifyAuthTag(r1.event)).toMatch(/^[0-9a-f]{64}$/)
    expect(r1.from).toMatchObject({ name: 'claude', role: 'agent' })
    expect(r1.event.tags).toContainEqual(['e', q1, '', 'root'])

    // What Claude Code sent: the prompt (without the @mention) to the streaming Messages API,
    // with its tools; nothing else but a connection warm-up (HEAD /) reached the mock.
    const asked = model.requests.filter((r) => r.api === 'anthropic')
    expect(asked).toHaveLength(1)
    expect(asked[0]!.path).toBe('/v1/messages')
    expect((asked[0]!.body as { stream?: boolean }).stream).toBe(true)
    expect(asked[0]!.lastUserText).toContain('what is the build status?')
    expect(asked[0]!.lastUserText).not.toContain('@claude')
    expect(asked[0]!.tools).toContain('Bash')
    const warmUp = (r: ModelRequest) => r.method === 'HEAD' && r.path === '/'
    expect(model.requests.filter((r) => r.api !== 'anthropic' && !warmUp(r))).toEqual([])

    expect((await status(fleet.devbox)).agents).toEqual([
      expect.objectContaining({
        name: 'claude',
        adapter: { name: '@zed-industries/claude-agent-acp', version: '0.23.1' },
      }),
    ])
    // claude writes the session's transcript: the one session of the thread.
    await expect.poll(() => transcripts(fleet.agentHome).length, { timeout: 30_000 }).toBe(1)
    const [sessionId] = transcripts(fleet.agentHome)

    // A tool call in the same thread (session), approved once from the laptop.
    const q2 = await fleet.ask('@claude write the proof file', q1)
    const withResult = await approveProofCall(fleet, model, q2, [
      'allow_always',
      'allow_once',
      'reject_once',
    ])
    expect(withResult.api).toBe('anthropic')
    expect(withResult.toolResults[0]!.callId).toMatch(/^toolu_/)

    // After a restart the node resumes the session with session/load (claude advertises it):
    // the model gets the whole earlier exchange, and what claude replayed while loading is not
    // posted again.
    await fleet.restartDevbox()
    const q3 = await fleet.ask('@claude still there?', q1)
    expect((await fleet.threaded(q3)).event.content).toBe('Still here.')
    await fleet.devboxNode.waitFor(
      new RegExp(
        `agent claude: resumed session ${sessionId} for #ops \\(thread ${q1.slice(0, 8)}\\)`,
      ),
      30_000,
    )
    const resumed = JSON.stringify(model.requests.at(-1)!.body)
    expect(resumed).toContain('The build is green (mock Claude).')
    expect(resumed).toContain('The tool said: kith-tool-ran')
    expect(transcripts(fleet.agentHome)).toEqual([sessionId])
    const contents = (await fleet.history()).map((i) => i.event.content)
    expect(contents.filter((c) => c.includes('started a new session'))).toEqual([])
    expect(contents.filter((c) => c === 'The build is green (mock Claude).')).toHaveLength(1)
    expect(contents.filter((c) => c === 'The tool said: kith-tool-ran')).toHaveLength(1)

    // Stopped as a person stops it (SIGTERM), the node stops its agent: nothing is left running
    // in the agent's directory.
    expect(processesIn(fleet.agentCwd).length).toBeGreaterThan(0)
    await fleet.stop()
    expect(processesIn(fleet.agentCwd)).toEqual([])

    // The same session, seen by the agent itself: its capabilities and session/list (which Kith
    // does not use) from a direct ACP client over the same HOME, after the node stopped it.
    const child = spawn(process.execPath, [claudeAcp()], {
      cwd: fleet.agentCwd,
      env: { PATH: process.env.PATH, HOME: fleet.agentHome },
      stdio: ['pipe', 'pipe', 'ignore'],
    })
    onTestFinished(() => {
      if (child.exitCode === null) child.kill('SIGKILL')
    })
    const conn = acp
      .client({ name: 'kith-test' })
      .connect(
        acp.ndJsonStream(
          Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
          Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>,
        ),
      )
    const init = await conn.agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {},
    })
    expect(init.agentCapabilities?.loadSession).toBe(true)
    expect(init.agentCapabilities?.sessionCapabilities?.list).toBeDefined()
    expect(init.authMethods).toEqual([])
    const listed = await conn.agent.request(acp.methods.agent.session.list, {})
    expect(listed.sessions).toEqual([expect.objectContaining({ sessionId, cwd: fleet.agentCwd })])
    // An unknown session is "not found" (-32002), not a crash or a silent new session.
    await expect(
      conn.agent.request(acp.methods.agent.session.load, {
        sessionId: '00000000-0000-4000-8000-000000000000',
        cwd: fleet.agentCwd,
        mcpServers: [],
      }),
    ).rejects.toMatchObject({ code: -32002 })
    conn.close()
    // Once it has opened a session, claude-agent-acp does not exit when its stdin closes; it is
    // stopped the way the node stops it.
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    await exited
  })

  it('without an API key, answers in one visible line that authentication is required, and the person is notified', async () => {
    const requestsBefore = model.requests.length
    const fleet = await startFleet({
      name: 'claude',
      command: [process.execPath, claudeAcp()],
      env: towardsMock(),
    })
    const hook = await startEndpoint({ answer: () => 200 })
    const added = await runKith(['notify', 'add', 'webhook', `${hook.url}/h`, '--on', 'errors'], {
      home: fleet.laptop,
    })
    expect(added.code, added.stderr).toBe(0)
    const q = await fleet.ask('@claude hello, are you there?')
    const reply = await fleet.threaded(q)
    // claude-agent-acp lists no authMethods to a client without terminal-auth support and says
    // only "Authentication required": so the line has no login hint of the agent's to carry.
    expect(reply.event.content).toBe('⚠ claude did not answer: authentication required')
    expect(reply.event.pubkey).toBe(fleet.agentPubkey)
    expect(JSON.parse((await hook.nth(0)).body.toString())).toMatchObject({
      class: 'errors',
      event: reply.event.id,
      body: '⚠ claude did not answer: authentication required',
    })
    // Not logged in, Claude Code asks no model.
    expect(model.requests.slice(requestsBefore).filter((r) => r.api === 'anthropic')).toEqual([])
  })
})
