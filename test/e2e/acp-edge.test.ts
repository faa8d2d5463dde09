import { mkdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import * as acp from '@agentclientprotocol/sdk'
import {
  createWebSocketStream,
  type WebSocketConstructor,
} from '@agentclientprotocol/sdk/experimental/ws-client'
import WebSocket from 'ws'
import { describe, expect, it, onTestFinished } from 'vitest'
import { acpEditor, textOf, type Editor } from '../helpers/acp-editor.js'
import { laptopAndDevbox, runKith, setupKith, startNodeProcess } from '../helpers/cli.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

/** The HTTP status a WebSocket upgrade to `url` gets with these headers (101: accepted). */
function upgradeStatus(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers })
    socket.on('open', () => {
      socket.close()
      resolve(101)
    })
    socket.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0)
      socket.terminate()
    })
    socket.on('error', (err) => {
      if (!/Unexpected server response/.test(err.message)) reject(err)
    })
  })
}

describe(
  'kith acp: an ACP editor uses a devbox agent through the fleet',
  { timeout: 180_000 },
  () => {
    it('prompts with streaming, approves a tool call, cancels, and loads a session after a restart', async () => {
      const { laptop, devbox } = await laptopAndDevbox(tempDir())
      const added = await setupKith(['agent', 'add', 'claude', '--', process.execPath, fakeAgent], {
        home: devbox,
      })
      expect(added.code, added.stderr).toBe(0)
      const nd = await startNodeProcess(devbox, ['--no-web', '--permission-timeout', '120'])
      const nl = await startNodeProcess(laptop, ['--no-web', '--acp-port', '0'])
      const ready = JSON.parse(await nl.waitFor(/"event":"ready"/)) as { acp: string }
      await nd.waitFor(/linked to/)
      await nl.waitFor(/linked to/)
      // AGENT@MACHINE names where it runs; the laptop learns that from the devbox's presence.
      await expect
        .poll(async () => (await runKith(['acp', 'claude@laptop'], { home: laptop })).stderr, {
          timeout: 60_000,
        })
        .toMatch(/@claude runs on devbox, not laptop: kith acp claude@devbox/)

      const ed = acpEditor(laptop, 'claude@devbox')
      const init = await ed.agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        // An editor that offers its files: the remote agent must never reach them.
        clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
      })
      expect(init.agentCapabilities?.loadSession).toBe(true)
      const { sessionId } = await ed.agent.request(acp.methods.agent.session.new, {
        cwd: '/home/me/laptop-project',
        mcpServers: [],
      })

      // A prompt: the model's words stream back, and the turn ends when the devbox's reply does.
      const first = await ed.agent.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: 'text', text: 'stream 3' }],
      })
      expect(first.stopReason).toBe('end_turn')
      expect(textOf(ed.updates, sessionId)).toBe('chunk 1 chunk 2 chunk 3')
      // An image cannot ride in a Kith prompt (text): the prompt is refused, saying so, and
      // nothing is sent (the agent never gets the words without the picture they are about).
      const refused = await ed.agent
        .request(acp.methods.agent.session.prompt, {
          sessionId,
          prompt: [
            { type: 'text', text: 'what is on this screenshot?' },
            { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
          ],
        })
        .then(
          (r) => r,
          (err: unknown) => err,
        )
      expect(refused).toMatchObject({
        code: -32602,
        data: { reason: 'uncarried-content', uncarried: ['image'] },
      })
      // The same thread, as the rest of the fleet sees it: signed by this device and the agent.
      const log = await runKith(['log', '#acp', '--json'], { home: devbox })
      expect(log.stdout, log.stderr).toContain('@claude stream 3')
      expect(log.stdout).not.toContain('screenshot')

      // A permission request: the editor's person answers it, as a decision signed here.
      ed.answer = (req) => {
        const once = req.options.find((o) => o.kind === 'allow_once')!
        return { outcome: { outcome: 'selected', optionId: once.optionId } }
      }
      ed.updates.length = 0
      const asked = await ed.agent.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: 'text', text: 'permission deploy' }],
      })
      expect(asked.stopReason).toBe('end_turn')
      expect(ed.asked.map((a) => a.toolCall.title)).toEqual(['deploy'])
      expect(textOf(ed.updates, sessionId), ed.stderr()).toMatch(/allow/)

      // A cancel stops this session's turn.
      const hanging = ed.agent.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: 'text', text: 'hang' }],
      })
      await expect
        .poll(async () => (await runKith(['session', 'list', '--json'], { home: laptop })).stdout, {
          timeout: 30_000,
        })
        .toMatch(/"status": ?"working"/)
      await ed.agent.notify(acp.methods.agent.session.cancel, { sessionId })
      expect((await hanging).stopReason).toBe('cancelled')
      expect(ed.reached).toEqual([])
      await ed.close()

      // A new kith acp (the editor restarted) loads the session by the id it was given.
      const again = acpEditor(laptop, 'claude')
      await again.agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {},
      })
      await again.agent.request(acp.methods.agent.session.load, {
        sessionId,
        cwd: '/home/me/laptop-project',
        mcpServers: [],
      })
      const replayed = again.updates.filter((u) => u.sessionId === sessionId)
      expect(
        replayed.some(
          (u) =>
            u.update.sessionUpdate === 'user_message_chunk' &&
            JSON.stringify(u.update).includes('stream 3'),
        ),
      ).toBe(true)
      const more = await again.agent.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: 'text', text: 'echo still here' }],
      })
      expect(more.stopReason).toBe('end_turn')
      expect(textOf(again.updates, sessionId)).toContain('still here')

      // The same over ACP's remote transport, served by kith up: only with this machine's token.
      const token = readFileSync(join(laptop, 'acp-token'), 'utf8').trim()
      expect(statSync(join(laptop, 'acp-token')).mode & 0o777).toBe(0o600)
      const url = `${ready.acp}claude@devbox`
      expect(await upgradeStatus(url, {})).toBe(401)
      expect(
        await upgradeStatus(url, {
          authorization: `Bearer ${token}`,
          origin: 'http://evil.example',
        }),
      ).toBe(403)
      expect(await upgradeStatus(url, { authorization: 'Bearer not-the-token' })).toBe(401)
      const remote: acp.SessionNotification[] = []
      const conn = acp
        .client({ name: 'remote-editor' })
        .onNotification(acp.methods.client.session.update, ({ params }) => {
          remote.push(params)
        })
        .connect(
          createWebSocketStream(url, {
            headers: { authorization: `Bearer ${token}` },
            WebSocket: WebSocket as unknown as WebSocketConstructor,
          }),
        )
      onTestFinished(() => conn.close())
      await conn.agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {},
      })
      const ws = await conn.agent.request(acp.methods.agent.session.new, {
        cwd: '/anywhere',
        mcpServers: [],
      })
      const overWs = await conn.agent.request(acp.methods.agent.session.prompt, {
        sessionId: ws.sessionId,
        prompt: [{ type: 'text', text: 'echo over the wire' }],
      })
      expect(overWs.stopReason).toBe('end_turn')
      expect(textOf(remote, ws.sessionId)).toContain('over the wire')
      await nl.stop()
      await nd.stop()
    })
    it("shows the remote agent's modes and models, and sets them: in a thread, and before a project start", async () => {
      const dir = tempDir()
      const { laptop, devbox } = await laptopAndDevbox(dir)
      const project = join(dir, 'app')
      mkdirSync(project)
      for (const args of [
        ['agent', 'add', 'coder', '--', process.execPath, fakeAgent, '--modes', '--model-option'],
        ['project', 'add', 'app', project],
      ]) {
        const r = await setupKith(args, { home: devbox })
        expect(r.code, r.stderr).toBe(0)
      }
      const nd = await startNodeProcess(devbox, ['--no-web', '--no-acp'])
      const nl = await startNodeProcess(laptop, ['--no-web', '--no-acp'])
      await nd.waitFor(/linked to/)
      await nl.waitFor(/linked to/)
      await expect
        .poll(async () => (await runKith(['acp', 'coder@laptop'], { home: laptop })).stderr, {
          timeout: 60_000,
        })
        .toMatch(/runs on devbox/)
      const replyTo = async (ed: Editor, sessionId: string, text: string) => {
        ed.updates.length = 0
        const r = await ed.agent.request(acp.methods.agent.session.prompt, {
          sessionId,
          prompt: [{ type: 'text', text }],
        })
        expect(r.stopReason, ed.stderr()).toBe('end_turn')
        return textOf(ed.updates, sessionId)
      }

      const ed = acpEditor(laptop, 'coder')
      await ed.agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {},
      })
      const first = await ed.agent.request(acp.methods.agent.session.new, {
        cwd: '/x',
        mcpServers: [],
      })
      // No project: a choice before the first prompt is refused, saying what to do instead.
      await expect(
        ed.agent.request(acp.methods.agent.session.setConfigOption, {
          sessionId: first.sessionId,
          configId: 'model',
          value: 'fake-small',
        }),
      ).rejects.toThrow(/send its first prompt/)
      expect(await replyTo(ed, first.sessionId, 'mode')).toMatch(/model: fake-large/)
      // In the thread: each change is a request the host checks and applies (kind 4150).
      const set = await ed.agent.request(acp.methods.agent.session.setConfigOption, {
        sessionId: first.sessionId,
        configId: 'model',
        value: 'fake-small',
      })
      expect(set.configOptions.find((o) => o.id === 'model')?.currentValue).toBe('fake-small')
      await ed.agent.request(acp.methods.agent.session.setMode, {
        sessionId: first.sessionId,
        modeId: 'plan',
      })
      expect(await replyTo(ed, first.sessionId, 'mode')).toMatch(/mode: plan, model: fake-small/)

      // A new session shows the remote agent's own menus, from its host's session reports.
      const second = await ed.agent.request(acp.methods.agent.session.new, {
        cwd: '/x',
        mcpServers: [],
      })
      expect(second.modes?.availableModes.map((m) => m.id)).toEqual([
        'default',
        'acceptEdits',
        'plan',
        'bypassPermissions',
      ])
      const model = second.configOptions?.find((o) => o.id === 'model')
      expect(model?.type === 'select' ? model.options : []).toEqual([
        { value: 'fake-large', name: 'fake-large' },
        { value: 'fake-small', name: 'fake-small' },
      ])
      await ed.close()

      // In a project, a model chosen before the first prompt rides in the session's start.
      const inApp = acpEditor(laptop, 'coder', ['--project', 'app'])
      await inApp.agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {},
      })
      // A session made by another connection and never prompted still loads (acpx makes one
      // with `sessions new`, then prompts it from another process).
      const loaded = await inApp.agent.request(acp.methods.agent.session.load, {
        sessionId: second.sessionId,
        cwd: '/x',
        mcpServers: [],
      })
      expect(loaded.modes?.availableModes.length).toBe(4)
      const started = await inApp.agent.request(acp.methods.agent.session.new, {
        cwd: '/x',
        mcpServers: [],
      })
      await inApp.agent.request(acp.methods.agent.session.setConfigOption, {
        sessionId: started.sessionId,
        configId: 'model',
        value: 'fake-small',
      })
      expect(await replyTo(inApp, started.sessionId, 'mode')).toMatch(/model: fake-small/)
      await nl.stop()
      await nd.stop()
    })
  },
)
