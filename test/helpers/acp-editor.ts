import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Readable, Writable } from 'node:stream'
import * as acp from '@agentclientprotocol/sdk'
import {
  createWebSocketStream,
  type WebSocketConstructor,
} from '@agentclientprotocol/sdk/experimental/ws-client'
import { onTestFinished } from 'vitest'
import WebSocket from 'ws'
import { kithBin } from '../../scripts/hub-process.js'
import { notePipeErrors } from './cli.js'

/** An editor driving `kith acp` with the SDK's own client, as Zed or any ACP client would. */
export interface Editor {
  agent: acp.ClientConnection['agent']
  /** Every session/update the editor received, in order. */
  updates: acp.SessionNotification[]
  /** Permission requests the editor was asked, and how it answers the next one. */
  asked: acp.RequestPermissionRequest[]
  answer: (req: acp.RequestPermissionRequest) => acp.RequestPermissionResponse
  /** Calls the agent made on the editor's own files or terminals (there must be none). */
  reached: string[]
  stderr: () => string
  close: () => Promise<void>
}

/** `kith acp AGENT` launched as an editor launches an ACP agent, driven by the SDK's client. */
export function acpEditor(home: string, target: string, flags: string[] = []): Editor {
  const child = spawn(kithBin, ['acp', target, ...flags], {
    env: { ...process.env, KITH_HOME: home },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  notePipeErrors(child, (line) => (stderr += line))
  const err = () => stderr
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  const e = editorState(err, async () => {
    child.stdin.end()
    child.kill('SIGTERM')
    await exited
  })
  const conn = connectEditor(
    e,
    acp.ndJsonStream(
      Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
      Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>,
    ),
  )
  onTestFinished(() => e.close())
  // One object: the test sets `answer` on it, and the handlers read it there.
  return Object.assign(e, { agent: conn.agent })
}

/**
 * An editor using ACP's remote transport (WebSocket) that `kith up` serves: `acpUrl` is the
 * node's `ready` line's `acp` (ws://127.0.0.1:PORT/acp/), `home` the node's KITH_HOME, whose
 * acp-token the editor presents as its bearer token, as the README tells a client to.
 */
export function acpEditorWs(home: string, acpUrl: string, target: string): Editor {
  const token = readFileSync(join(home, 'acp-token'), 'utf8').trim()
  const e = editorState(
    () => '',
    async () => {
      conn.close()
      await conn.closed
    },
  )
  const conn = connectEditor(
    e,
    createWebSocketStream(`${acpUrl}${target}`, {
      headers: { authorization: `Bearer ${token}` },
      WebSocket: WebSocket as unknown as WebSocketConstructor,
    }),
  )
  onTestFinished(() => e.close())
  return Object.assign(e, { agent: conn.agent })
}

function editorState(stderr: () => string, close: () => Promise<void>): Omit<Editor, 'agent'> {
  let closing: Promise<void> | undefined
  return {
    updates: [],
    asked: [],
    answer: () => ({ outcome: { outcome: 'cancelled' } }),
    reached: [],
    stderr,
    close: () => (closing ??= close()),
  }
}

/** The SDK's client on `stream`, recording into `e` what the agent sends it. */
function connectEditor(e: Omit<Editor, 'agent'>, stream: acp.Stream) {
  return acp
    .client({ name: 'test-editor' })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      e.updates.push(params)
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      e.asked.push(params)
      return e.answer(params)
    })
    .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
      e.reached.push(`read ${params.path}`)
      return { content: 'the laptop file' }
    })
    .connect(stream)
}

/** The text of the agent_message_chunk updates the editor got for a session. */
export const textOf = (updates: acp.SessionNotification[], sessionId: string) =>
  updates
    .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === 'agent_message_chunk')
    .map((u) => {
      const c = (u.update as { content: { type: string; text?: string } }).content
      return c.type === 'text' ? (c.text ?? '') : ''
    })
    .join('')
