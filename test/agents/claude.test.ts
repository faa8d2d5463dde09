// claude-agent-acp (@zed-industries/claude-agent-acp, pinned in test/agents/pinned) without
// credentials, hosted by a real devbox node: handshake, session new and load, and the
// auth-required path of a prompt (ACP -32000) as a visible one-line reply.
import { spawn } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { basename, join } from 'node:path'
import { Readable, Writable } from 'node:stream'
import * as acp from '@agentclientprotocol/sdk'
import { describe, expect, it, onTestFinished } from 'vitest'
import { runKith } from '../helpers/cli.js'
import { startEndpoint } from '../helpers/push-service.js'
import { pinnedFile, processesIn, startFleet, status } from './fleet.js'

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

describe('claude-agent-acp@0.23.1 without credentials', { timeout: 150_000 }, () => {
  it('starts, keeps its session across a node restart, and answers prompts with "authentication required"', async () => {
    const fleet = await startFleet({ name: 'claude', command: [process.execPath, claudeAcp()] })
    // The laptop's person is told of the agent's error (kith-notify/1) through a webhook.
    const hook = await startEndpoint({ answer: () => 200 })
    const added = await runKith(['notify', 'add', 'webhook', `${hook.url}/h`, '--on', 'errors'], {
      home: fleet.laptop,
    })
    expect(added.code, added.stderr).toBe(0)
    const q1 = await fleet.ask('@claude hello, are you there?')
    const r1 = await fleet.threaded(q1)
    expect(JSON.parse((await hook.nth(0)).body.toString())).toMatchObject({
      class: 'errors',
      event: r1.event.id,
      body: '⚠ claude did not answer: authentication required',
    })
    // claude-agent-acp lists no authMethods to a client without terminal-auth support and says
    // only "Authentication required": so the line has no login hint of the agent's to carry.
    expect(r1.event.content).toBe('⚠ claude did not answer: authentication required')
    expect(r1.event.pubkey).toBe(fleet.agentPubkey)
    expect((await status(fleet.devbox)).agents).toEqual([
      expect.objectContaining({
        name: 'claude',
        adapter: { name: '@zed-industries/claude-agent-acp', version: '0.23.1' },
      }),
    ])

    // session/new succeeded before the prompt failed: claude writes the session's transcript.
    await expect.poll(() => transcripts(fleet.agentHome).length, { timeout: 30_000 }).toBe(1)
    const [sessionId] = transcripts(fleet.agentHome)

    // After a restart the node resumes that session with session/load (claude advertises it);
    // the replayed history (the prompt, claude's "Not logged in" message) is not posted again.
    await fleet.restartDevbox()
    // In the first prompt's thread: its session.
    const q2 = await fleet.ask('@claude second try', q1)
    const r2 = await fleet.threaded(q2)
    expect(r2.event.content).toBe('⚠ claude did not answer: authentication required')
    await fleet.devboxNode.waitFor(
      new RegExp(
        `agent claude: resumed session ${sessionId} for #ops \\(thread ${q1.slice(0, 8)}\\)`,
      ),
      30_000,
    )
    const contents = (await fleet.history()).map((i) => i.event.content)
    expect(contents.filter((c) => c.includes('started a new session'))).toEqual([])
    expect(contents.filter((c) => /not logged in/i.test(c))).toEqual([])
    expect(contents.filter((c) => c.startsWith('⚠ claude'))).toHaveLength(2)

    // The same session, seen by the agent itself: its capabilities and session/list (which Kith
    // does not use) from a direct ACP client over the same HOME, after the node stopped it.
    await fleet.stop()
    expect(processesIn(fleet.agentCwd)).toEqual([])
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
})
