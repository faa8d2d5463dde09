// npm run bench:reconcile [-- --events N --missing M]
// A node that holds all but M of a hub's N events (spread over the whole history) catches up by
// NIP-77 reconciliation: how long reconciliation takes, in how many rounds, and how long fetching
// the missing events by id takes, against a real `kith hub` process. Prints JSON.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import WebSocket from 'ws'
import { initNostrWasm } from 'nostr-wasm'
import { setNostrWasm, finalizeEvent } from 'nostr-tools/wasm'
import { generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import { signAuthEvent } from '../dist/events/nip42.js'
import { EventStore } from '../dist/store/event-store.js'
import { RelayClient } from '../dist/link/relay-client.js'
import { fetchIds, reconcile } from '../dist/link/reconcile.js'
import { spawnHub } from './hub-process.js'
import { scriptArgs } from './script-args.js'

const { values } = scriptArgs(import.meta.url, {
  events: { type: 'string', default: '100000' },
  missing: { type: 'string', default: '1000' },
})
const N = Number(values.events)
const M = Number(values.missing)
setNostrWasm(await initNostrWasm())
const progress = (s) => process.stderr.write(`bench:reconcile ${s}\n`)
const round = (x, d = 2) => Math.round(x * 10 ** d) / 10 ** d

const dir = mkdtempSync(join(tmpdir(), 'kith-bench-reconcile-'))
const ownerSk = generateSecretKey()
const owner = getPublicKey(ownerSk)
progress(`preparing ${N} events`)
const base = Math.floor(Date.now() / 1000) - N - 60
const store = new EventStore(join(dir, 'hub.db'), { synchronous: 'normal' })
const keys = []
let batch = []
for (let i = 0; i < N; i++) {
  const e = finalizeEvent(
    { kind: 9, created_at: base + i, tags: [['h', `ch${i % 20}`]], content: `message ${i}` },
    ownerSk,
  )
  keys.push({ created_at: e.created_at, id: e.id })
  batch.push(e)
  if (batch.length === 5000) {
    store.insertBatch(batch)
    batch = []
  }
}
if (batch.length) store.insertBatch(batch)
store.close()

// The node lacks every (N/M)th event: gaps all through its history, as late arrivals leave.
const step = Math.floor(N / M)
const missing = new Set(
  keys
    .filter((_, i) => i % step === 0)
    .slice(0, M)
    .map((k) => k.id),
)
const mine = keys.filter((k) => !missing.has(k.id))

const hub = await spawnHub(['--db', join(dir, 'hub.db'), '--owner', owner, '--rate', '0'], {
  env: { KITH_HOME: join(dir, 'home') },
})
const client = await RelayClient.connect(new WebSocket(hub.url), { url: hub.url })
const challenge = await client.challenge()
const auth = await client.auth(signAuthEvent(hub.url, challenge, ownerSk))
if (!auth.ok) throw new Error(`AUTH refused: ${auth.message}`)

const report = { events_at_hub: N, held_by_node: mine.length, runs: [] }
for (let run = 0; run < 3; run++) {
  progress(`run ${run + 1}: reconciling`)
  const t0 = performance.now()
  const result = await reconcile(client, { kinds: [9], since: 0 }, mine, 120_000)
  const t1 = performance.now()
  let got = 0
  await fetchIds(
    client,
    result.need,
    (events) => {
      got += events.length
      return Promise.resolve()
    },
    60_000,
  )
  const t2 = performance.now()
  const right = result.need.length === M && result.need.every((id) => missing.has(id))
  report.runs.push({
    rounds: result.rounds,
    needed: result.need.length,
    fetched: got,
    found_exactly_the_missing: right,
    reconcile_s: round((t1 - t0) / 1000, 3),
    fetch_s: round((t2 - t1) / 1000, 3),
    total_s: round((t2 - t0) / 1000, 3),
  })
  if (!right || got !== M) process.exitCode = 1
}
client.close()
await hub.stop()
rmSync(dir, { recursive: true, force: true })
console.log(JSON.stringify(report, null, 2))
