// npm run bench:agent [-- --turns N]
// The agent host's own overhead per turn, against the raw ACP SDK turn time measured in the same
// run with the same fake agent. A real `kith hub` and a real `kith up` node host the test agent;
// a plain client authenticated as the owner sends N prompts one after another and waits for each
// reply. The node records, per turn: accepted prompt → session/prompt sent ("in") and
// stopReason → reply acknowledged by the hub ("out"). Prints JSON.
import { spawn, execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable, Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { createInterface } from 'node:readline'
import WebSocket from 'ws'
import * as acp from '@agentclientprotocol/sdk'
import { bytesToHex } from '@noble/hashes/utils.js'
import { decode } from 'nostr-tools/nip19'
import * as nip44 from 'nostr-tools/nip44'
import { finalizeEvent, generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import { signAuthEvent } from '../dist/events/nip42.js'
import { ControlClient } from '../dist/cli/control-client.js'
import { kithBin, spawnHub } from './hub-process.js'
import { scriptArgs } from './script-args.js'

const { values } = scriptArgs(import.meta.url, { turns: { type: 'string', default: '200' } })
const N = Number(values.turns)
const fakeAgent = fileURLToPath(new URL('../test/fixtures/fake-agent.mjs', import.meta.url))
const progress = (s) => process.stderr.write(`bench:agent ${s}\n`)
const round = (x) => Math.round(x * 1000) / 1000
const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const at = (p) => s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
  return { p50_ms: round(at(50)), p99_ms: round(at(99)), samples: s.length }
}

// 1. The raw SDK turn, client and fake agent, no Kith in between.
progress('raw SDK turns')
const child = spawn(process.execPath, [fakeAgent], { stdio: ['pipe', 'pipe', 'inherit'] })
const conn = acp
  .client({ name: 'bench' })
  .onNotification(acp.methods.client.session.update, () => {
    rawUpdates++
  })
  .connect(acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)))
await conn.agent.request(acp.methods.agent.initialize, {
  protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities: {},
})
const { sessionId } = await conn.agent.request(acp.methods.agent.session.new, {
  cwd: tmpdir(),
  mcpServers: [],
})
const raw = []
// The raw update rate: one turn streaming U chunks, counted as the SDK client receives them.
const U = 5000
let rawUpdates = 0
for (let i = 0; i < N; i++) {
  const t = performance.now()
  await conn.agent.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: 'text', text: `echo ${i}` }],
  })
  raw.push(performance.now() - t)
}
rawUpdates = 0
const rawStart = performance.now()
await conn.agent.request(acp.methods.agent.session.prompt, {
  sessionId,
  prompt: [{ type: 'text', text: `stream ${U}` }],
})
const rawUpdatesPerS = rawUpdates / ((performance.now() - rawStart) / 1000)
conn.close()
child.kill()

// 2. Through a hub and a node hosting the same agent.
const dir = mkdtempSync(join(tmpdir(), 'kith-bench-agent-'))
const ownerSk = generateSecretKey()
const owner = getPublicKey(ownerSk)
const home = join(dir, 'devbox')
const env = { ...process.env, KITH_HOME: home }
const hub = await spawnHub(['--db', join(dir, 'hub.db'), '--owner', owner, '--rate', '0'], {
  env: { KITH_HOME: join(dir, 'hubhome') },
})
execFileSync(kithBin, ['init', '--name', 'devbox', '--owner-key-stdin'], {
  env,
  input: bytesToHex(ownerSk),
})
execFileSync(kithBin, ['hub', 'add', hub.url], { env })
execFileSync(kithBin, ['agent', 'add', 'claude', '--', process.execPath, fakeAgent], { env })
const agentNpub = JSON.parse(execFileSync(kithBin, ['agent', 'list', '--json'], { env }).toString())
  .agents[0].npub
const agent = decode(agentNpub).data
const node = spawn(kithBin, ['up'], { env, stdio: ['ignore', 'pipe', 'inherit'] })
await new Promise((resolve) =>
  createInterface({ input: node.stdout }).on('line', (l) => /linked to/.test(l) && resolve()),
)

progress(`${N} turns through the node`)
const ws = new WebSocket(hub.url)
const replies = new Map()
let onFrame = () => undefined
await new Promise((resolve, reject) => {
  ws.on('message', (data) => {
    const msg = JSON.parse(data.toString())
    if (msg[0] === 'AUTH')
      ws.send(JSON.stringify(['AUTH', signAuthEvent(hub.url, msg[1], ownerSk)]))
    else if (msg[0] === 'OK' && msg[2] === true && replies.size === 0 && !resolve.done) {
      resolve.done = true
      ws.send(JSON.stringify(['REQ', 'replies', { kinds: [9], authors: [agent], limit: 0 }]))
      resolve()
    } else if (msg[0] === 'OK' && msg[2] === false) reject(new Error(msg[3]))
    else if (msg[0] === 'EVENT' && msg[1] === 'frames') onFrame(msg[2])
    else if (msg[0] === 'EVENT' && msg[1] === 'replies') {
      const q = msg[2].tags.find((t) => t[0] === 'e')?.[1]
      replies.get(q)?.(msg[2])
    }
  })
})
/** A chat message from the owner mentioning the agent. */
const promptEvent = (content) =>
  finalizeEvent(
    {
      kind: 9,
      created_at: Math.floor(Date.now() / 1000),
      tags: [
        ['h', 'bench'],
        ['p', agent],
      ],
      content,
    },
    ownerSk,
  )
const e2e = []
for (let i = 0; i < N; i++) {
  const prompt = promptEvent(`@claude echo ${i}`)
  const t = performance.now()
  const got = new Promise((resolve) => replies.set(prompt.id, resolve))
  ws.send(JSON.stringify(['EVENT', prompt]))
  const reply = await got
  if (reply.content !== String(i)) throw new Error(`wrong reply ${reply.content}`)
  e2e.push(performance.now() - t)
}

// Observer frames: the owner's client receives the streaming turn's updates (kind 24142,
// NIP-44 to the owner key), decrypts and counts them.
progress(`observer frames: one turn streaming ${U} updates`)
const convKey = nip44.getConversationKey(ownerSk, agent)
let frameCount = 0
let frameUpdates = 0
const allFrames = new Promise((resolve) => {
  onFrame = (event) => {
    frameCount++
    frameUpdates += JSON.parse(nip44.decrypt(event.content, convKey)).updates.length
    if (frameUpdates >= U) resolve()
  }
})
ws.send(JSON.stringify(['REQ', 'frames', { kinds: [24142], '#p': [owner], limit: 0 }]))
const streamPrompt = promptEvent(`@claude stream ${U}`)
const streamStart = performance.now()
const streamReply = new Promise((resolve) => replies.set(streamPrompt.id, resolve))
ws.send(JSON.stringify(['EVENT', streamPrompt]))
await Promise.all([streamReply, allFrames])
const streamS = (performance.now() - streamStart) / 1000

const control = await ControlClient.connect(join(home, 'node.sock'))
const { turns } = await control.request('metrics')
control.close()
ws.close()
node.kill('SIGTERM')
await hub.stop()
rmSync(dir, { recursive: true, force: true })

const inS = stats(turns.map((t) => t.inMs))
const outS = stats(turns.map((t) => t.outMs))
console.log(
  JSON.stringify(
    {
      bench: 'agent',
      node: process.version,
      cores: availableParallelism(),
      turns: N,
      raw_sdk_turn: stats(raw),
      host_in: { ...inS, what: 'prompt accepted by the node -> session/prompt sent' },
      host_out: { ...outS, what: 'stopReason -> reply acknowledged (OK) by the hub' },
      host_overhead_p50_ms: round(inS.p50_ms + outS.p50_ms),
      turn_inside_node: stats(turns.map((t) => t.turnMs)),
      end_to_end: {
        ...stats(e2e),
        what: 'client EVENT -> agent reply received by the client, through hub, node and agent',
      },
      observer: {
        updates: U,
        frames: frameCount,
        updates_per_s: Math.round(U / streamS),
        frames_per_s: Math.round(frameCount / streamS),
        raw_sdk_updates_per_s: Math.round(rawUpdatesPerS),
        what: 'one turn streaming U updates: received and decrypted by the owner client as kind 24142 frames, vs the raw SDK client',
      },
    },
    null,
    2,
  ),
)
