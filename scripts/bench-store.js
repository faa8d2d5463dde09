// npm run bench:store [-- --events N --batch B --rounds R --busy-disk]
// How long the hub's main thread is held by its writes: N kind-9 events (two tags each) written
// in B-event group commits into a fresh hub.db, three ways, alternating, R rounds:
//   sqlite-fsync  synchronous=full: sqlite fsyncs the WAL inside each commit (the hub before);
//   apart         the hub's store now: commit without fsync, then an fsync of the WAL on libuv's
//                 pool before the batch counts as durable (store/wal-sync.ts), WAL checkpoint
//                 every 4,000 pages;
//   apart-ckpt1k  the same with sqlite's default checkpoint (1,000 pages).
// For each: wall time, the main thread's time inside insertBatch (sum, p50, p99), and the time
// spent waiting for fsyncs that the main thread did not spend. --busy-disk runs a background
// writer (256 MB files written with conv=fsync, in a loop) throughout, as a shared disk has.
// Prints JSON.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { finalizeEvent, generateSecretKey } from 'nostr-tools/pure'
import { EventStore } from '../dist/store/event-store.js'
import { hubMigrations } from '../dist/store/hub-schema.js'
import { scriptArgs } from './script-args.js'

const { values } = scriptArgs(import.meta.url, {
  events: { type: 'string', default: '20000' },
  batch: { type: 'string', default: '64' },
  rounds: { type: 'string', default: '3' },
  'busy-disk': { type: 'boolean', default: false },
})
const N = Number(values.events)
const B = Number(values.batch)
const R = Number(values.rounds)
const dir = mkdtempSync(join(tmpdir(), 'kith-bench-store-'))

const sk = generateSecretKey()
const padding = ' '.repeat(200)
const events = Array.from({ length: N }, (_, i) =>
  finalizeEvent(
    {
      kind: 9,
      created_at: 1_700_000_000 + i,
      tags: [
        ['h', `c${i % 20}`],
        ['p', 'ab'.repeat(32)],
      ],
      content: `hello ${i}${padding}`,
    },
    sk,
  ),
)
const raws = events.map((e) => JSON.stringify(e))

const modes = {
  'sqlite-fsync': { syncApart: false },
  apart: { syncApart: true },
  'apart-ckpt1k': { syncApart: true, checkpoint: 1000 },
}

const ms = (x) => Math.round(x * 100) / 100
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]

async function run(name, mode, round) {
  const path = join(dir, `${name}-${round}.db`)
  const store = new EventStore(path, { migrations: hubMigrations, syncApart: mode.syncApart })
  if (mode.checkpoint !== undefined) store.db.pragma(`wal_autocheckpoint = ${mode.checkpoint}`)
  const held = []
  let waited = 0
  const t0 = performance.now()
  for (let i = 0; i < N; i += B) {
    const s = performance.now()
    store.insertBatch(events.slice(i, i + B), raws.slice(i, i + B))
    held.push(performance.now() - s)
    const w = performance.now()
    await new Promise((resolve, reject) =>
      store.afterCommit((err) => (err === undefined ? resolve() : reject(err))),
    )
    waited += performance.now() - w
  }
  const wall = performance.now() - t0
  await store.drained()
  const count = store.count()
  store.close()
  rmSync(path, { force: true })
  rmSync(`${path}-wal`, { force: true })
  rmSync(`${path}-shm`, { force: true })
  if (count !== N) throw new Error(`${name}: stored ${count} of ${N}`)
  held.sort((a, b) => a - b)
  return {
    mode: name,
    round,
    wall_ms: Math.round(wall),
    main_thread_write_ms: Math.round(held.reduce((a, b) => a + b, 0)),
    commit_p50_ms: ms(quantile(held, 0.5)),
    commit_p99_ms: ms(quantile(held, 0.99)),
    fsync_wait_off_main_ms: Math.round(waited),
    wal_fsyncs: store.walSyncs,
  }
}

let busy
if (values['busy-disk']) {
  busy = spawn(
    'sh',
    [
      '-c',
      `while true; do dd if=/dev/zero of=${join(dir, 'busy')} bs=1M count=256 conv=fsync status=none; done`,
    ],
    { stdio: 'ignore', detached: true },
  )
}
const results = []
try {
  for (let r = 1; r <= R; r++) {
    for (const [name, mode] of Object.entries(modes)) {
      results.push(await run(name, mode, r))
      process.stderr.write(`round ${r} ${name} done\n`)
    }
  }
} finally {
  if (busy !== undefined) process.kill(-busy.pid, 'SIGKILL')
  rmSync(dir, { recursive: true, force: true })
}
const summary = {}
for (const name of Object.keys(modes)) {
  const mine = results.filter((x) => x.mode === name)
  const sums = mine.map((x) => x.main_thread_write_ms).sort((a, b) => a - b)
  summary[name] = { main_thread_write_ms_median: sums[sums.length >> 1] }
}
const base = summary['sqlite-fsync'].main_thread_write_ms_median
for (const s of Object.values(summary)) s.vs_sqlite_fsync = ms(s.main_thread_write_ms_median / base)
console.log(
  JSON.stringify(
    {
      bench: 'store',
      node: process.version,
      events: N,
      batch: B,
      busy_disk: values['busy-disk'],
      load_average_at_start: (await import('node:os')).loadavg().map((x) => ms(x)),
      summary,
      runs: results,
    },
    null,
    2,
  ),
)
