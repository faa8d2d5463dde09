// npm run bench:hub [-- --events N --connections C --inflight F --sync full|normal]
// Ingest throughput and query latency of a real `kith hub` subprocess; prints JSON.
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import WebSocket from 'ws'
import { initNostrWasm } from 'nostr-wasm'
import { setNostrWasm, finalizeEvent, verifyEvent } from 'nostr-tools/wasm'
import { generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import { signAuthEvent } from '../dist/events/nip42.js'
import { spawnHub } from './hub-process.js'

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '20000' },
    connections: { type: 'string', default: '4' },
    inflight: { type: 'string', default: '64' },
    queries: { type: 'string', default: '200' },
    sync: { type: 'string', default: 'full' },
    workers: { type: 'string' },
  },
})
const N = Number(values.events)
const C = Number(values.connections)
const F = Number(values.inflight)
const Q = Number(values.queries)

setNostrWasm(await initNostrWasm())
const progress = (s) => process.stderr.write(`bench:hub ${s}\n`)

const pct = (sorted, p) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
const round = (x, d = 3) => Math.round(x * 10 ** d) / 10 ** d
const summary = (samples) => {
  const s = [...samples].sort((a, b) => a - b)
  return { p50: round(pct(s, 50)), p95: round(pct(s, 95)), p99: round(pct(s, 99)) }
}

// Single-core verify rate of the library the hub uses, measured in this run.
function verifyRate(events) {
  const sample = events.slice(0, 3000).map((e) => ({ ...e }))
  const t0 = performance.now()
  for (const e of sample) if (!verifyEvent(e)) throw new Error('self-signed event failed to verify')
  return sample.length / ((performance.now() - t0) / 1000)
}

const dir = mkdtempSync(join(tmpdir(), 'kith-bench-'))
const sk = generateSecretKey()
const owner = getPublicKey(sk)
const topics = Array.from({ length: 50 }, (_, i) => `topic${i}`)
const base = Math.floor(Date.now() / 1000) - N
progress(`signing ${N} events`)
const events = []
for (let i = 0; i < N; i++) {
  events.push(
    finalizeEvent(
      {
        kind: i % 10 === 0 ? 7 : 9,
        created_at: base + i,
        tags: [
          ['h', topics[i % topics.length]],
          ['t', `tag${i % 200}`],
        ],
        content: `bench message ${i} ${'x'.repeat(i % 120)}`,
      },
      sk,
    ),
  )
}
const frames = events.map((e) => JSON.stringify(['EVENT', e]))
const verifyPerSec = verifyRate(events)

const hubArgs = [
  '--db',
  join(dir, 'hub.db'),
  '--owner',
  owner,
  '--rate',
  '0',
  '--sync',
  values.sync,
]
if (values.workers !== undefined) hubArgs.push('--workers', values.workers)
const hub = await spawnHub(hubArgs, { env: { KITH_HOME: join(dir, 'home') } })

function connect() {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(hub.url)
    ws.once('error', reject)
    ws.on('message', function first(data) {
      const msg = JSON.parse(data.toString())
      if (msg[0] === 'AUTH') {
        const auth = signAuthEvent(hub.url, msg[1], sk)
        ws.send(JSON.stringify(['AUTH', auth]))
      } else if (msg[0] === 'OK') {
        ws.off('message', first)
        if (!msg[2]) reject(new Error(`AUTH refused: ${msg[3]}`))
        else resolve(ws)
      }
    })
  })
}
const conns = await Promise.all(Array.from({ length: C }, connect))

// CPU seconds per hub thread (Linux /proc), to show where ingest time goes.
function threadCpu(pid) {
  const ticks = {}
  try {
    for (const t of readdirSync(`/proc/${pid}/task`)) {
      const name = readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim()
      const f = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8').split(') ')[1].split(' ')
      ticks[`${name}-${t}`] = Number(f[11]) + Number(f[12])
    }
  } catch {
    // Not Linux: the breakdown is optional.
  }
  return ticks
}
const cpuBefore = threadCpu(hub.child.pid)
const selfBefore = process.cpuUsage()
progress(`ingesting over ${C} connections, ${F} in flight each`)
const latencies = new Float64Array(N)
const sentAt = new Map()
let next = 0
let acked = 0
let refused = 0
const t0 = performance.now()
await new Promise((resolve) => {
  const sendOne = (ws) => {
    if (next >= N) return
    const i = next++
    sentAt.set(events[i].id, [i, performance.now()])
    ws.send(frames[i])
  }
  for (const ws of conns) {
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString())
      if (msg[0] !== 'OK') return
      const entry = sentAt.get(msg[1])
      if (!entry) return
      sentAt.delete(msg[1])
      latencies[entry[0]] = performance.now() - entry[1]
      if (!msg[2]) refused++
      if (++acked === N) resolve()
      else sendOne(ws)
    })
    for (let k = 0; k < F; k++) sendOne(ws)
  }
})
const ingestSeconds = (performance.now() - t0) / 1000
const eventsPerSec = N / ingestSeconds
const cpuAfter = threadCpu(hub.child.pid)
const selfCpu = process.cpuUsage(selfBefore)
const hubCpu = {}
for (const [name, t] of Object.entries(cpuAfter)) {
  const d = (t - (cpuBefore[name] ?? 0)) / 100
  if (d > 0.01) hubCpu[name] = round(d, 2)
}
if (refused > 0) throw new Error(`${refused} events refused during ingest`)

// Query shapes, timed from REQ to EOSE on one connection.
const ws = conns[0]
let subN = 0
function timeReq(filter) {
  return new Promise((resolve) => {
    const sub = `q${subN++}`
    let count = 0
    const t = performance.now()
    const onMsg = (data) => {
      const msg = JSON.parse(data.toString())
      if (msg[1] !== sub) return
      if (msg[0] === 'EVENT') count++
      else if (msg[0] === 'EOSE' || msg[0] === 'CLOSED') {
        ws.off('message', onMsg)
        ws.send(JSON.stringify(['CLOSE', sub]))
        resolve({ ms: performance.now() - t, count })
      }
    }
    ws.on('message', onMsg)
    ws.send(JSON.stringify(['REQ', sub, filter]))
  })
}
const pick = (i) => events[(i * 7919) % N]
const shapes = {
  id: (i) => ({ ids: [pick(i).id] }),
  author_limit20: () => ({ authors: [owner], limit: 20 }),
  kind_limit100: () => ({ kinds: [7], limit: 100 }),
  tag_limit50: (i) => ({ '#h': [topics[i % topics.length]], limit: 50 }),
  window_limit500: (i) => {
    const since = base + ((i * 104729) % Math.max(1, N - 2000))
    return { since, until: since + 1000, limit: 500 }
  },
}
progress('timing queries')
const queries = {}
for (const [name, make] of Object.entries(shapes)) {
  const samples = []
  let results = 0
  for (let i = 0; i < Q; i++) {
    const r = await timeReq(make(i))
    samples.push(r.ms)
    results = r.count
  }
  const s = summary(samples)
  queries[name] = { p50_ms: s.p50, p95_ms: s.p95, results_last: results }
}

const status = readFileSync(`/proc/${hub.child.pid}/status`, 'utf8')
const peakRssMb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024
for (const c of conns) c.close()
await hub.stop()
rmSync(dir, { recursive: true, force: true })

const lat = summary(Array.from(latencies))
console.log(
  JSON.stringify(
    {
      bench: 'hub',
      node: process.version,
      cores: (await import('node:os')).availableParallelism(),
      events: N,
      connections: C,
      in_flight_per_connection: F,
      sync: values.sync,
      ingest: {
        events_per_s: Math.round(eventsPerSec),
        seconds: round(ingestSeconds, 2),
        ok_latency_ms: lat,
        hub_cpu_s_by_thread: hubCpu,
        client_cpu_s: round((selfCpu.user + selfCpu.system) / 1e6, 2),
      },
      queries,
      peak_rss_mb: round(peakRssMb, 1),
      baseline: {
        verify_per_s_single_core: Math.round(verifyPerSec),
        verifier: 'nostr-tools/wasm (libsecp256k1)',
        ingest_over_verify: round(eventsPerSec / verifyPerSec, 2),
      },
    },
    null,
    2,
  ),
)
