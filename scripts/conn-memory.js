// node scripts/conn-memory.js [--conns N (default 2,000)] [--snapshots [--keep DIR]] [--top K]
// What one held connection costs a kith hub, and of what (issue 34, bench:scale's devices row).
// Starts a real `kith hub` (with the bin's own V8 and malloc flags), then in three phases:
// the hub with its grants loaded; N authenticated connections held (NIP-42, device keys of
// N/50 people); the same N each with one live subscription (a REQ to one channel, limit 0).
// After each phase: RSS (anonymous and file-backed, /proc). With --snapshots, a V8 heap
// snapshot of the hub after each phase instead (it forces a full GC, so it shows what is live,
// not garbage not yet collected; making it grows the hub's RSS, so RSS is measured in a run
// without), diffed by constructor: the per-connection bytes of each kind of object.
import { mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { initNostrWasm } from 'nostr-wasm'
import { setNostrWasm } from 'nostr-tools/wasm'
import { generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import { signGrant } from '../dist/grants/grant.js'
import { spawnHub } from './hub-process.js'
import { connect, memoryOf, publishOne, round } from './bench-relay.js'
import { scriptArgs } from './script-args.js'

const { values } = scriptArgs(import.meta.url, {
  conns: { type: 'string', default: '2000' },
  snapshots: { type: 'boolean', default: false },
  top: { type: 'string', default: '25' },
  keep: { type: 'string' },
})
const N = Number(values.conns)
const TOP = Number(values.top)
setNostrWasm(await initNostrWasm())
const progress = (s) =>
  process.stderr.write(`conn-memory ${new Date().toISOString().slice(11, 19)} ${s}\n`)
const dir = mkdtempSync(join(tmpdir(), 'kith-conn-memory-'))

// The bin's shebang flags (bin/kith.js), so the hub runs as a user's does, plus the snapshot signal.
const nodeArgs = ['--max-semi-space-size=2', '--heap-growing-percent=30']
if (values.snapshots) nodeArgs.push('--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${dir}`)
process.env.KITH_HUB_NODE_ARGS = nodeArgs.join(' ')

const founderSk = generateSecretKey()
const founder = getPublicKey(founderSk)
const grantTime = Math.floor(Date.now() / 1000) - 86400
const people = Math.ceil(N / 50)
const grants = []
const devices = []
for (let p = 0; p < people; p++) {
  const personSk = p === 0 ? founderSk : generateSecretKey()
  let parent
  if (p > 0) {
    const g = signGrant(
      { subject: getPublicKey(personSk), role: 'owner', fleet: founder },
      founderSk,
      personSk,
      grantTime,
    )
    grants.push(g)
    parent = g.id
  }
  for (let d = 0; d < 50 && devices.length < N; d++) {
    const sk = generateSecretKey()
    grants.push(
      signGrant(
        {
          subject: getPublicKey(sk),
          role: 'device',
          fleet: founder,
          ...(parent ? { parent } : {}),
        },
        personSk,
        sk,
        grantTime,
      ),
    )
    devices.push(sk)
  }
}

const hub = await spawnHub(['--db', join(dir, 'hub.db'), '--owner', founder, '--rate', '0'], {
  env: { KITH_HOME: join(dir, 'home'), MALLOC_ARENA_MAX: '2' },
})
const admin = await connect(hub.url, founderSk, { quietMs: 100 })
for (const g of grants) await publishOne(admin, g)

/** Waits until the hub has written its next heap snapshot; returns it parsed. */
async function snapshot() {
  const before = new Set(readdirSync(dir).filter((f) => f.endsWith('.heapsnapshot')))
  hub.child.kill('SIGUSR2')
  let file
  let size = -1
  for (;;) {
    await new Promise((r) => setTimeout(r, 500))
    file ??= readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f))
    if (file === undefined) continue
    const now = statSync(join(dir, file)).size
    if (now === size && now > 0) break
    size = now
  }
  const text = readFileSync(join(dir, file), 'utf8')
  // --keep DIR: the snapshots stay there, for a look in DevTools' Memory tab. They hold the
  // hub's whole heap (its keys too): Node writes them 0600, and a rename keeps that mode.
  if (values.keep) renameSync(join(dir, file), join(values.keep, `${phases.length}-${file}`))
  else rmSync(join(dir, file))
  return JSON.parse(text)
}

/** Self bytes and count per (type, constructor) of a snapshot, and its total. */
function byConstructor(snap) {
  const { node_fields: fields, node_types: types } = snap.snapshot.meta
  const types0 = types[0]
  const F = fields.length
  const iType = fields.indexOf('type')
  const iName = fields.indexOf('name')
  const iSize = fields.indexOf('self_size')
  const out = new Map()
  let total = 0
  const nodes = snap.nodes
  for (let i = 0; i < nodes.length; i += F) {
    const type = types0[nodes[i + iType]]
    let name = snap.strings[nodes[i + iName]]
    // Strings and code are many names each: one row per type.
    if (['string', 'concatenated string', 'sliced string', 'code', 'number'].includes(type))
      name = ''
    if (type === 'closure') name = `${name}()`
    const key = `${type}:${name.slice(0, 60)}`
    const size = nodes[i + iSize]
    total += size
    const row = out.get(key) ?? { bytes: 0, count: 0 }
    row.bytes += size
    row.count++
    out.set(key, row)
  }
  return { rows: out, total }
}

function diff(a, b, n) {
  const rows = []
  for (const [key, rb] of b.rows) {
    const ra = a.rows.get(key) ?? { bytes: 0, count: 0 }
    const bytes = rb.bytes - ra.bytes
    if (Math.abs(bytes) < n * 4) continue
    rows.push({
      what: key,
      bytes_per_conn: round(bytes / n, 1),
      count_per_conn: round((rb.count - ra.count) / n, 2),
    })
  }
  rows.sort((x, y) => y.bytes_per_conn - x.bytes_per_conn)
  return { heap_per_conn: round((b.total - a.total) / n, 1), top: rows.slice(0, TOP) }
}

const report = { conns: N, people, load_start: round(loadavg()[0], 2) }
const phases = []
async function phase(name) {
  await new Promise((r) => setTimeout(r, 1000))
  const mem = memoryOf(hub.child.pid)
  const snap = values.snapshots ? byConstructor(await snapshot()) : undefined
  phases.push({ name, mem, snap })
  progress(
    `${name}: rss ${mem.rss_mb} MB (anon ${mem.rss_anon_mb})${snap ? `, heap ${round(snap.total / 2 ** 20, 1)} MB` : ''}`,
  )
}

await phase('grants loaded')
const held = []
for (let i = 0; i < N; i += 20) {
  const batch = devices.slice(i, Math.min(N, i + 20))
  held.push(...(await Promise.all(batch.map((sk) => connect(hub.url, sk, { quietMs: 100 })))))
}
await phase(`${N} authenticated`)
for (const ws of held) {
  await new Promise((resolve) => {
    ws.on('message', (data) => {
      if (JSON.parse(data.toString())[0] === 'EOSE') resolve()
    })
    ws.send(JSON.stringify(['REQ', 'busy', { kinds: [9], '#h': ['busy'], limit: 0 }]))
  })
}
await phase(`${N} subscribed`)

const kb = (x) => round(x / 1024, 2)
for (let i = 1; i < phases.length; i++) {
  const [a, b] = [phases[i - 1], phases[i]]
  const step = { step: `${a.name} → ${b.name}` }
  if (a.mem.rss_mb !== undefined) {
    step.rss_kb_per_conn = kb(((b.mem.rss_mb - a.mem.rss_mb) * 2 ** 20) / N)
    step.anon_kb_per_conn = kb(((b.mem.rss_anon_mb - a.mem.rss_anon_mb) * 2 ** 20) / N)
    step.rss_mb = [a.mem.rss_mb, b.mem.rss_mb]
  }
  if (b.snap) step.heap = diff(a.snap, b.snap, N)
  ;(report.steps ??= []).push(step)
}
report.load_end = round(loadavg()[0], 2)
console.log(JSON.stringify(report, null, 1))
for (const ws of [...held, admin]) ws.close()
await hub.stop()
rmSync(dir, { recursive: true, force: true })
