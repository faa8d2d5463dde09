// npm run bench:chat [-- --messages M --subscribers 1,10,100 --catchup N --encrypt --catchup-only]
// 1. Send-to-delivery latency through a real `kith hub` with 1, 10 and 100 subscribed links
//    (simulated: authenticated WebSocket subscribers in this process), and through a real
//    `kith up` node (hub → link → verify → store → control socket).
// 2. Catch-up: a fresh `kith up` node pulls N missed events (default 100,000) from a hub.
// With --encrypt every message is sealed (kith-e2e/1) under its channel's epoch key (the time to
// seal counts in the latency), and each receiver opens it before it counts as delivered (the
// real node does; for simulated links, see openMs).
// --catchup-only skips part 1 (catch-up pairs run faster on a shared machine). KITH_NODE_NODE_ARGS
// (e.g. "--max-semi-space-size=2 --cpu-prof") runs the `kith up` nodes under node with those flags
// instead of the bin's shebang, for profiling.
// Prints JSON.
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
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
import { newEpoch } from '../dist/events/e2e-epoch.js'
import { makeEnvelope } from '../dist/events/e2e-envelope.js'
import { openSealed, sealTemplate } from '../dist/events/e2e-seal.js'
import { loadIdentity } from '../dist/identity/keys.js'
import { nip44DecryptNative } from '../dist/node/nip44-native.js'
import { kithBin, spawnHub } from './hub-process.js'
import { scriptArgs } from './script-args.js'

const { values } = scriptArgs(import.meta.url, {
  messages: { type: 'string', default: '200' },
  subscribers: { type: 'string', default: '1,10,100' },
  catchup: { type: 'string', default: '100000' },
  encrypt: { type: 'boolean', default: false },
  'catchup-only': { type: 'boolean', default: false },
})
const M = Number(values.messages)
const counts = values.subscribers.split(',').map(Number)
const CATCHUP = Number(values.catchup)
const ENCRYPT = values.encrypt
const LATENCY = !values['catchup-only']
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

// kith-e2e/1: one epoch per channel, made on first use.
const epochs = new Map()
const epochsById = new Map()
const epochOf = (channel) => {
  let e = epochs.get(channel)
  if (e === undefined) {
    e = newEpoch(channel, 0, (n) => crypto.getRandomValues(new Uint8Array(n)))
    epochs.set(channel, e)
    epochsById.set(e.id, e)
  }
  return e
}
/** The event as sent: signed by the owner, sealed first with --encrypt. */
const made = (template) =>
  finalizeEvent(
    ENCRYPT ? sealTemplate(template, owner, epochOf(template.tags[0][1])) : template,
    ownerSk,
  )
/**
 * With --encrypt, how long a receiver takes to open `e` (as a node opens it, natively). Every
 * simulated link lives in this one process, where opening 100 copies one after another would
 * queue each behind the others; a real receiver opens its copy on its own machine. So each
 * event is opened once, timed, and that time is added to its arrival at every link.
 */
const openTimes = new Map()
const openMs = (e) => {
  if (!ENCRYPT) return 0
  let ms = openTimes.get(e.id)
  if (ms === undefined) {
    const t = performance.now()
    openSealed(e, (id) => epochsById.get(id), nip44DecryptNative)
    ms = performance.now() - t
    openTimes.set(e.id, ms)
  }
  return ms
}

/** A kind-9 message in the bench channel, made now (sealed with --encrypt). */
const benchMessage = (content) =>
  made({ kind: 9, created_at: Math.floor(Date.now() / 1000), tags: [['h', 'bench']], content })
/** Envelopes of every epoch so far to the device of the node in `home`. */
const envelopesFor = (home, createdAt) => {
  const device = loadIdentity(home).devicePubkey
  return [...epochs.values()].map((e) =>
    finalizeEvent(makeEnvelope(e, device, ownerSk, owner, createdAt), ownerSk),
  )
}

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

/**
 * `kith up --json` for a node of this owner; resolves when a log line matches `until`.
 * `prepare(home)` runs between kith init and kith up (envelopes to its new device key).
 */
async function startNode(name, hubUrl, until, prepare = async () => undefined) {
  const home = join(dir, name)
  await run(['init', '--name', name, '--owner-key-stdin'], home, bytesToHex(ownerSk))
  await run(['hub', 'add', hubUrl], home)
  await prepare(home)
  const started = performance.now()
  const nodeArgs = process.env.KITH_NODE_NODE_ARGS?.split(' ').filter(Boolean)
  const child = spawn(
    nodeArgs ? process.execPath : kithBin,
    [...(nodeArgs ? [...nodeArgs, kithBin] : []), 'up', '--json'],
    {
      env: { ...process.env, KITH_HOME: home },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  const lines = createInterface({ input: child.stdout })
  const line = await new Promise((resolve, reject) => {
    lines.on('line', (l) => until.test(l) && resolve(l))
    child.on('exit', (c) => reject(new Error(`kith up exited ${c}`)))
  })
  return { home, child, started, line, at: performance.now() }
}

/**
 * CPU seconds (user + system) a process has used, from /proc (Linux; null elsewhere). On a loaded
 * machine wall time says little; CPU time still says what the work costs.
 */
function cpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    // Not Linux, or the process is gone: the report says null.
    return null
  }
}

/**
 * CPU seconds of each thread of a process that used any (Linux), most first: the main thread,
 * then the others by name (V8's GC helpers, libuv's pool and worker threads are all "node" in
 * Node 20). Says where a process's CPU went without a profiler.
 */
function threadCpuSeconds(pid) {
  const out = []
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
      const name =
        tid === String(pid) ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ')
      const s = (Number(fields[11]) + Number(fields[12])) / 100
      if (s > 0) out.push(`${name} ${s}`)
    }
  } catch {
    // Not Linux, or the process is gone: the report says null.
    return null
  }
  return out.sort((a, b) => Number(b.split(' ').at(-1)) - Number(a.split(' ').at(-1)))
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
  encrypted: ENCRYPT,
  messages: M,
  latency: {},
}

// 1. Latency.
if (LATENCY) {
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
          const arrived = performance.now() - t
          samples.push(arrived + openMs(e))
          if (--expected === 0) wake()
        }),
      )
    }
    const sender = await subscriber(hub.url, () => undefined)
    for (let i = 0; i < M; i++) {
      // With --encrypt the time to seal counts as part of the send.
      const t0 = performance.now()
      const e = benchMessage(`latency ${n} ${i}`)
      const done = new Promise((r) => (wake = r))
      expected = n
      sentAt.set(e.id, ENCRYPT ? t0 : performance.now())
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
  // The node's device gets the epoch key first (it opens what follows as a member would).
  if (ENCRYPT)
    for (const env of envelopesFor(real.home, Math.floor(Date.now() / 1000)))
      sender.send(JSON.stringify(['EVENT', env]))
  for (let i = 0; i < M; i++) {
    const t0 = performance.now()
    const e = benchMessage(`node ${i}`)
    const done = new Promise((r) => (wakeNode = r))
    nodeSentAt.set(e.id, ENCRYPT ? t0 : performance.now())
    sender.send(JSON.stringify(['EVENT', e]))
    await done
  }
  report.latency.real_node = stats(nodeSamples)
  sender.close()
  control.close()
  real.child.kill('SIGTERM')
  await hub.stop()
}

// 2. Catch-up: the events are written straight into a hub's store (setup, not measured), then a
// fresh node with no cursor starts and pulls them all.
progress(`catch-up: preparing ${CATCHUP} events`)
const base = Math.floor(Date.now() / 1000) - CATCHUP - 60
const store = new EventStore(join(dir, 'catchup.db'), { synchronous: 'normal' })
let batch = []
for (let i = 0; i < CATCHUP; i++) {
  batch.push(
    made({
      kind: 9,
      created_at: base + i,
      tags: [['h', `ch${i % 20}`]],
      content: `missed message ${i}`,
    }),
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
const hubCpuBefore = cpuSeconds(hub2.child.pid)
// Its keys were handed out before the first message, as a channel's first epoch is.
const fresh = await startNode('fresh', hub2.url, /caught up with/, async (home) => {
  if (!ENCRYPT) return
  const link = await subscriber(hub2.url, () => undefined)
  const envs = envelopesFor(home, base - 30)
  let left = envs.length
  const stored = new Promise((resolve) =>
    link.on('message', (d) => JSON.parse(d.toString())[0] === 'OK' && --left === 0 && resolve()),
  )
  for (const env of envs) link.send(JSON.stringify(['EVENT', env]))
  await stored
  link.close()
})
const seconds = (fresh.at - fresh.started) / 1000
const nodeCpu = cpuSeconds(fresh.child.pid)
const nodeThreads = threadCpuSeconds(fresh.child.pid)
const hubCpu = cpuSeconds(hub2.child.pid)
const counted = new NodeStore(fresh.home)
const rows = counted.events.query([{ kinds: [9], limit: CATCHUP + 10 }], {
  defaultLimit: CATCHUP,
  maxLimit: CATCHUP + 10,
})
const stored = rows.length
// With --encrypt, node.db holds them opened: every one of them was read.
const opened = rows.filter((r) => r.raw.includes('missed message')).length
counted.close()
report.catch_up = {
  events: CATCHUP,
  stored_by_node: stored,
  opened_by_node: opened,
  seconds_from_start: round(seconds),
  events_per_s: Math.round(CATCHUP / seconds),
  node_cpu_s: nodeCpu,
  node_thread_cpu_s: nodeThreads,
  hub_cpu_s: hubCpu === null || hubCpuBefore === null ? null : round(hubCpu - hubCpuBefore),
  node_log: JSON.parse(fresh.line).message,
}
fresh.child.kill('SIGTERM')
await hub2.stop()
rmSync(dir, { recursive: true, force: true })
console.log(JSON.stringify(report, null, 2))
if (stored !== CATCHUP || opened !== CATCHUP) process.exitCode = 1
