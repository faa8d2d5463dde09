// npm run bench:chat [-- --messages M --subscribers 1,10,100 --catchup N]
// 1. Send-to-delivery latency through a real `kith hub` with 1, 10 and 100 subscribed links
//    (simulated: authenticated WebSocket subscribers in this process), and through a real
//    `kith up` node (hub → link → verify → store → control socket).
// 2. Catch-up: a fresh `kith up` node pulls N missed events (default 100,000) from a hub.
// Prints JSON.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { createInterface } from 'node:readline'
import WebSocket from 'ws'
import { initNostrWasm } from 'nostr-wasm'
import { setNostrWasm, finalizeEvent } from 'nostr-tools/wasm'
import { bytesToHex } from '@noble/hashes/utils.js'
import { generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import { signAuthEvent } from '../dist/events/nip42.js'
import { EventStore } from '../dist/store/event-store.js'
import { NodeStore } from '../dist/store/node-store.js'
import { ControlClient } from '../dist/cli/control-client.js'
import { kithBin, spawnHub } from './hub-process.js'

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '200' },
    subscribers: { type: 'string', default: '1,10,100' },
    catchup: { type: 'string', default: '100000' },
  },
})
const M = Number(values.messages)
const counts = values.subscribers.split(',').map(Number)
const CATCHUP = Number(values.catchup)
setNostrWasm(await initNostrWasm())
const progress = (s) => process.stderr.write(`bench:chat ${s}\n`)
const round = (x, d = 2) => Math.round(x * 10 ** d) / 10 ** d
const pct = (s, p) => s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
const stats = (samples) => {
  const s = [...samples].sort((a, b) => a - b)
  return {
    p50_ms: round(pct(s, 50)),
    p99_ms: round(pct(s, 99)),
    max_ms: round(s[s.length - 1]),
    samples: s.length,
  }
}

const dir = mkdtempSync(join(tmpdir(), 'kith-bench-chat-'))
const ownerSk = generateSecretKey()
const owner = getPublicKey(ownerSk)

function run(args, home, input) {
  return new Promise((resolve, reject) => {
    const child = spawn(kithBin, args, {
      env: { ...process.env, KITH_HOME: home },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    child.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`kith ${args.join(' ')}: ${out}`)),
    )
    child.stdin.end(input ?? '')
  })
}

/** `kith up --json` for a node of this owner; resolves when a log line matches `until`. */
async function startNode(name, hubUrl, until) {
  const home = join(dir, name)
  await run(['init', '--name', name, '--owner-key-stdin'], home, bytesToHex(ownerSk))
  await run(['hub', 'add', hubUrl], home)
  const started = performance.now()
  const child = spawn(kithBin, ['up', '--json'], {
    env: { ...process.env, KITH_HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const lines = createInterface({ input: child.stdout })
  const line = await new Promise((resolve, reject) => {
    lines.on('line', (l) => until.test(l) && resolve(l))
    child.on('exit', (c) => reject(new Error(`kith up exited ${c}`)))
  })
  return { home, child, started, line, at: performance.now() }
}

function subscriber(url, onEvent) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url)
    ws.once('error', reject)
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString())
      if (msg[0] === 'AUTH') ws.send(JSON.stringify(['AUTH', signAuthEvent(url, msg[1], ownerSk)]))
      else if (msg[0] === 'OK' && msg[2] === true)
        ws.send(JSON.stringify(['REQ', 'live', { kinds: [9], limit: 0 }]))
      else if (msg[0] === 'EOSE') resolve(ws)
      else if (msg[0] === 'EVENT') onEvent(msg[2])
    })
  })
}

const report = {
  bench: 'chat',
  node: process.version,
  cores: availableParallelism(),
  messages: M,
  latency: {},
}

// 1. Latency.
const hub = await spawnHub(['--db', join(dir, 'hub.db'), '--owner', owner, '--rate', '0'], {
  env: { KITH_HOME: join(dir, 'hubhome') },
})
const sentAt = new Map()
for (const n of counts) {
  progress(`latency with ${n} subscribed links`)
  const samples = []
  let expected = 0
  let wake
  const subs = []
  for (let i = 0; i < n; i++) {
    subs.push(
      await subscriber(hub.url, (e) => {
        const t = sentAt.get(e.id)
        if (t === undefined) return
        samples.push(performance.now() - t)
        if (--expected === 0) wake()
      }),
    )
  }
  const sender = await subscriber(hub.url, () => undefined)
  for (let i = 0; i < M; i++) {
    const e = finalizeEvent(
      {
        kind: 9,
        created_at: Math.floor(Date.now() / 1000),
        tags: [['h', 'bench']],
        content: `latency ${n} ${i}`,
      },
      ownerSk,
    )
    const done = new Promise((r) => (wake = r))
    expected = n
    sentAt.set(e.id, performance.now())
    sender.send(JSON.stringify(['EVENT', e]))
    await done
  }
  report.latency[`links_${n}`] = stats(samples)
  for (const s of [...subs, sender]) s.close()
}

// Through a real node: send on a raw link, measure until the node's control socket reports it.
progress('latency through a real kith up node')
const real = await startNode('receiver', hub.url, /caught up with/)
const control = await ControlClient.connect(join(real.home, 'node.sock'))
const nodeSamples = []
const nodeSentAt = new Map()
let wakeNode
control.on('chat', (item) => {
  const t = nodeSentAt.get(item.event.id)
  if (t !== undefined) {
    nodeSamples.push(performance.now() - t)
    wakeNode()
  }
})
await control.request('subscribe', {})
const sender = await subscriber(hub.url, () => undefined)
for (let i = 0; i < M; i++) {
  const e = finalizeEvent(
    {
      kind: 9,
      created_at: Math.floor(Date.now() / 1000),
      tags: [['h', 'bench']],
      content: `node ${i}`,
    },
    ownerSk,
  )
  const done = new Promise((r) => (wakeNode = r))
  nodeSentAt.set(e.id, performance.now())
  sender.send(JSON.stringify(['EVENT', e]))
  await done
}
report.latency.real_node = stats(nodeSamples)
sender.close()
control.close()
real.child.kill('SIGTERM')
await hub.stop()

// 2. Catch-up: the events are written straight into a hub's store (setup, not measured), then a
// fresh node with no cursor starts and pulls them all.
progress(`catch-up: preparing ${CATCHUP} events`)
const base = Math.floor(Date.now() / 1000) - CATCHUP - 60
const store = new EventStore(join(dir, 'catchup.db'), { synchronous: 'normal' })
let batch = []
for (let i = 0; i < CATCHUP; i++) {
  batch.push(
    finalizeEvent(
      {
        kind: 9,
        created_at: base + i,
        tags: [['h', `ch${i % 20}`]],
        content: `missed message ${i}`,
      },
      ownerSk,
    ),
  )
  if (batch.length === 5000) {
    store.insertBatch(batch)
    batch = []
  }
}
if (batch.length) store.insertBatch(batch)
store.close()
const hub2 = await spawnHub(['--db', join(dir, 'catchup.db'), '--owner', owner, '--rate', '0'], {
  env: { KITH_HOME: join(dir, 'hubhome') },
})
progress('catch-up: starting a fresh node')
const fresh = await startNode('fresh', hub2.url, /caught up with/)
const seconds = (fresh.at - fresh.started) / 1000
const counted = new NodeStore(fresh.home)
const stored = counted.events.query([{ kinds: [9], limit: CATCHUP + 10 }], {
  defaultLimit: CATCHUP,
  maxLimit: CATCHUP + 10,
}).length
counted.close()
report.catch_up = {
  events: CATCHUP,
  stored_by_node: stored,
  seconds_from_start: round(seconds),
  events_per_s: Math.round(CATCHUP / seconds),
  node_log: JSON.parse(fresh.line).message,
}
fresh.child.kill('SIGTERM')
await hub2.stop()
rmSync(dir, { recursive: true, force: true })
console.log(JSON.stringify(report, null, 2))
if (stored !== CATCHUP) process.exitCode = 1
