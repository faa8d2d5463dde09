// npm run bench:scale [-- --max N --only size|devices|catchup --queries Q --devices D
//                        --strfry PATH | --against ws://HOST:PORT [--against-pid PID]
//                        [--against-db DIR] --seed S --cache DIR --svg FILE | --plot REPORT.json]
//        npm run bench:scale -- --only history --max N   (only make the history's cache file)
// How the cost grows with the work, for a kith hub and (with --strfry or --against) another
// relay in the same run, with the same client (scripts/bench-relay.js). Prints JSON and draws
// docs/bench-scale.svg.
//
// size:    a fleet-shaped history (20 people with 60 devices and agents, 12 channels, kind-9
//          messages with replies, kind-7 reactions, agents' long outputs) ingested in slices up
//          to --max events (default 1,000,000); at 10k, 100k and 1M: ingest rate over the last
//          slice, peak/steady RSS (anonymous and file-backed), db size on disk, the relay's
//          start-up time on that db, and REQ p50/p99 per shape, cold (the first pass after that
//          restart; the OS page cache stays warm) and warm (the best of two later passes, the
//          relays' passes alternating). The history is
//          signed once, on every core, into a cache file (bench-scale-history.js) and streamed
//          from it to both relays, so ingest measures the relays, not this client's signing.
// devices: on a fresh relay, --devices (default 2,000) connections held open, each a device key
//          of one of 40 people (a kith hub caps a person at 64 connections), half subscribed to
//          one busy channel: RSS per connection, a member's EVENT→OK with none held and with all
//          held, and send→deliver to the subscribers. Then the same on two kith hubs, the second
//          started with --peer the first (the scale-out path), half the connections on each.
// catchup: a node that lacks 1% of the history (every 100th event) finds them by NIP-77 with
//          this project's client (src/link/reconcile.ts; strfry serves NIP-77 too) and fetches
//          them by id: time and bytes on the wire.
//
// --strfry PATH runs that strfry binary itself (config below: compression off, db in a temp
// dir), so every row is measured for it; --against URL measures a relay started apart, and the
// rows that need to restart it (start-up, cold queries) are left out for it.
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { initNostrWasm } from 'nostr-wasm'
import { setNostrWasm, finalizeEvent } from 'nostr-tools/wasm'
import { generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import { SPACING, channels, defaultCacheDir, keyOf, openHistory } from './bench-scale-history.js'
import { signAuthEvent } from '../dist/events/nip42.js'
import { signEvent } from '../dist/events/event.js'
import { makeGrant, signGrant } from '../dist/grants/grant.js'
import { RelayClient } from '../dist/link/relay-client.js'
import { fetchIds, reconcile } from '../dist/link/reconcile.js'
import { kithBin, spawnHub } from './hub-process.js'
import {
  connect,
  cpuSpent,
  memoryOf,
  openSocket,
  publishOne,
  pump,
  round,
  summary,
  threadCpu,
  timeReq,
  timeShapes,
} from './bench-relay.js'

const { values } = parseArgs({
  options: {
    max: { type: 'string', default: '1000000' },
    only: { type: 'string' },
    queries: { type: 'string', default: '100' },
    devices: { type: 'string', default: '2000' },
    strfry: { type: 'string' },
    against: { type: 'string' },
    'against-pid': { type: 'string' },
    'against-db': { type: 'string' },
    plot: { type: 'string' },
    seed: { type: 'string', default: '1' },
    cache: { type: 'string', default: defaultCacheDir() },
    report: { type: 'string' },
    help: { type: 'boolean' },
    'no-peered': { type: 'boolean' },
    svg: {
      type: 'string',
      default: fileURLToPath(new URL('../docs/bench-scale.svg', import.meta.url)),
    },
  },
})
if (values.help) {
  process.stdout.write(`npm run bench:scale -- [options]
  --max N            events in the size run (default 1,000,000; checkpoints at 10k, 100k, 1M)
  --only WHAT        size | devices | catchup (size, then catch-up only) | history (make the cache)
  --queries Q        queries per shape and pass (default 100)
  --devices D        connections held in the devices run (default 2,000); the run is made on
                     a kith hub, the other relay, and two kith hubs peered (--peer), half the
                     connections on each (--no-peered leaves that row out)
  --strfry PATH      run that strfry binary too, with its own db in a temp dir
  --against URL      measure a relay started apart (--against-pid PID, --against-db DIR)
  --seed S           the history's seed (default 1): the same keys, events and ids every run
  --cache DIR        where the signed history is kept (default ~/.cache/kith-bench, or
                     $KITH_BENCH_CACHE): scale-history-v<V>-seed<S>-n<N>.jsonl, one event a line
  --svg FILE         the plot (default docs/bench-scale.svg); --plot REPORT.json redraws it
  --report FILE      also write the report there after each phase (a long run keeps what it
                     measured if a later phase fails)

The history is signed once per seed and size, with a worker per core (500-1,650 events/s on
this shared 2-core machine), and streamed from the cache to both relays; a run with --max N
uses the smallest whole cache file of that seed with at least N events. 100,000 events took 61 s
and 80 MB at load 8-10; 1,000,000 took 32 min at load 9-15 (13.4 CPU-minutes: ~7 min on two
idle cores) and 798 MB (make them ahead with --only history --max 1000000). A cache that
is incomplete or does not parse is reported, removed and made again.
Events start 400 days before midnight UTC of the day the file is made (earlier if longer), one
every ${SPACING} s (a million span ~347 days), the grants a day before: a kith hub takes any past
created_at, strfry refuses events over 3 years old, so a cache is made again as it nears that.
`)
  process.exit(0)
}
const MAX = Number(values.max)
const SEED = Number(values.seed)
const Q = Number(values.queries)
const D = Number(values.devices)
const only = values.only
if (only !== undefined && !['size', 'devices', 'catchup', 'history'].includes(only))
  throw new Error('--only takes size, devices, catchup or history')
if (!Number.isSafeInteger(SEED) || SEED < 0) throw new Error('--seed takes a whole number')
const SLICE = 10_000
const CONNS = 4
const INFLIGHT = 64
const checkpoints = [10_000, 100_000, 1_000_000].filter((c) => c <= MAX)
if (!checkpoints.includes(MAX)) checkpoints.push(MAX)

setNostrWasm(await initNostrWasm())
const progress = (s) =>
  process.stderr.write(`bench:scale ${new Date().toISOString().slice(11, 19)} ${s}\n`)
const load = () => round(loadavg()[0], 2)
const dir = mkdtempSync(join(tmpdir(), 'kith-bench-scale-'))

// ---- the relays -------------------------------------------------------------------------------

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    })
  })

/** Bytes a directory's files take on disk (allocated blocks: LMDB's file is sparse). */
function diskBytes(path) {
  let total = 0
  for (const f of readdirSync(path)) {
    const st = statSync(join(path, f))
    total += st.isDirectory() ? diskBytes(join(path, f)) : st.blocks * 512
  }
  return total
}

/** A kith hub on its own db directory; start() resolves with its start-up ms. */
function kithRelay(name, founder) {
  const db = join(dir, name)
  mkdirSync(db, { recursive: true })
  const relay = {
    name: 'kith',
    restartable: true,
    home: join(dir, `${name}-home`),
    /** More `kith hub` arguments (`--peer URL`). */
    args: [],
    async start() {
      const t0 = performance.now()
      const hub = await spawnHub(
        ['--db', join(db, 'hub.db'), '--owner', founder, '--rate', '0', ...relay.args],
        { env: { KITH_HOME: relay.home } },
      )
      relay.hub = hub
      relay.url = hub.url
      relay.pid = hub.child.pid
      return performance.now() - t0
    },
    stop: () => relay.hub.stop(),
    dbBytes: () => diskBytes(db),
  }
  return relay
}

/**
 * Two kith hubs, the second started with `--peer` the first (kith-hub "Peers"): the scale-out
 * path for more devices than one hub should hold. The second hub's key is made by `kith hub key`
 * and granted by the founder at the first hub; the second learns the fleet's grants from it.
 */
function peeredKithRelays(name, founder) {
  const a = kithRelay(`${name}-a`, founder)
  const b = kithRelay(`${name}-b`, founder)
  const relay = {
    name: 'kith, 2 peered hubs',
    hubs: [a, b],
    extraGrants: [],
    async start() {
      await a.start()
      relay.url = a.url
      relay.pid = a.pid
      const key = spawnSync(kithBin, ['hub', 'key', '--owner', founder, '--json'], {
        env: { ...process.env, KITH_HOME: b.home },
        encoding: 'utf8',
      })
      if (key.status !== 0) throw new Error(`kith hub key: ${key.stderr}`)
      const [, subject, proof] = JSON.parse(key.stdout).request.split(':')
      relay.extraGrants = [
        signEvent(makeGrant({ subject, role: 'hub', fleet: founder, proof }, grantTime), founderSk),
      ]
    },
    /**
     * Once the first hub holds the grants: the second starts, and has them from its peer. It is
     * ready when it holds as many grants as the first: one key's AUTH taken is not enough, as a
     * grant refused in a pass (its parent not there yet) is published again only at its end.
     */
    async afterGrants(lastKey) {
      b.args = ['--peer', a.url]
      await b.start()
      const deadline = performance.now() + 120_000
      const want = await grantCount(a.url)
      for (;;) {
        const answer = await authAnswer(b.url, lastKey)
        const held = answer.ok ? await grantCount(b.url) : 0
        if (held >= want) return
        if (performance.now() > deadline)
          throw new Error(`${b.url} never had the grants: ${held} of ${want}; ${answer.message}`)
        await new Promise((r) => setTimeout(r, 250))
      }
    },
    stop: async () => {
      await b.stop()
      await a.stop()
    },
  }
  return relay
}

/** How many grants (kind 4140) the relay at `url` serves the founder. */
async function grantCount(url) {
  const ws = await connect(url, founderSk)
  try {
    return (await timeReq(ws, { kinds: [4140], limit: 5000 })).count
  } finally {
    ws.close()
  }
}

/** Whether `url` takes `sk`'s AUTH; the socket is closed either way. */
function authAnswer(url, sk) {
  return new Promise((resolve) => {
    const ws = openSocket(url)
    const done = (answer) => {
      ws.close()
      resolve(answer)
    }
    ws.once('error', (err) => done({ ok: false, message: err.message }))
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString())
      if (msg[0] === 'AUTH') ws.send(JSON.stringify(['AUTH', signAuthEvent(url, msg[1], sk)]))
      else if (msg[0] === 'OK') done({ ok: msg[2], message: msg[3] })
    })
  })
}

/** strfry's shipped config but: db here, compression off (see bench-relay.js), no fd limit. */
function strfryConf(db, port) {
  return `db = "${db}/"
dbParams { maxreaders = 256
  mapsize = 10995116277760
  noReadAhead = false }
events { maxEventSize = 65536
  rejectEventsNewerThanSeconds = 900
  rejectEventsOlderThanSeconds = 94608000
  rejectEphemeralEventsOlderThanSeconds = 60
  ephemeralEventsLifetimeSeconds = 300
  maxNumTags = 2000
  maxTagValSize = 1024 }
relay { bind = "127.0.0.1"
  port = ${port}
  nofiles = 0
  realIpHeader = ""
  auth { enabled = true
    serviceUrl = "ws://127.0.0.1:${port}" }
  info { name = "bench" }
  maxWebsocketPayloadSize = 131072
  maxReqFilterSize = 200
  autoPingSeconds = 55
  enableTcpKeepalive = false
  queryTimesliceBudgetMicroseconds = 10000
  maxFilterLimit = 500
  maxSubsPerConnection = 200
  compression { enabled = false
    slidingWindow = false }
  logging { invalidEvents = true }
  numThreads { ingester = 3
    reqWorker = 3
    reqMonitor = 3
    negentropy = 2 }
  negentropy { enabled = true
    maxSyncEvents = 1000000 } }
`
}

function strfryRelay(name, bin) {
  const db = join(dir, name)
  rmSync(db, { recursive: true, force: true })
  const relay = {
    name: 'strfry',
    restartable: true,
    async start() {
      const port = await freePort()
      mkdirSync(db, { recursive: true })
      const conf = join(dir, `${name}.conf`)
      writeFileSync(conf, strfryConf(db, port))
      const t0 = performance.now()
      const child = spawn(bin, [`--config=${conf}`, 'relay'], { stdio: ['ignore', 'pipe', 'pipe'] })
      let log = ''
      const exited = new Promise((resolve) => child.on('exit', resolve))
      await new Promise((resolve, reject) => {
        child.on('exit', (code) => reject(new Error(`strfry exited (${code}): ${log}`)))
        const lines = createInterface({ input: child.stderr })
        lines.on('line', (line) => {
          if (log.length < 20_000) log += `${line}\n`
          if (/Started websocket server on/.test(line)) resolve()
        })
        child.stdout.resume()
      })
      relay.child = child
      relay.url = `ws://127.0.0.1:${port}`
      relay.pid = child.pid
      relay.stop = async () => {
        if (child.exitCode === null) child.kill('SIGTERM')
        await exited
      }
      return performance.now() - t0
    },
    dbBytes: () => diskBytes(db),
  }
  return relay
}

/** A relay started apart (--against): it cannot be restarted here. */
function externalRelay() {
  return {
    name: values.against,
    restartable: false,
    url: values.against,
    pid: values['against-pid'] === undefined ? undefined : Number(values['against-pid']),
    start: async () => undefined,
    stop: async () => undefined,
    dbBytes: () =>
      values['against-db'] === undefined ? undefined : diskBytes(values['against-db']),
  }
}

function otherRelay(name) {
  if (values.strfry !== undefined) return strfryRelay(name, values.strfry)
  if (values.against !== undefined) return externalRelay()
  return undefined
}

// ---- the fleet --------------------------------------------------------------------------------

// The founder of every fleet here is the history's p0: the same key for a seed, so the cached
// grants name it. The devices run's own keys are new each run (its grants are made in seconds).
const founderSk = keyOf(SEED, 'p0')
const founder = getPublicKey(founderSk)
const grantTime = Math.floor(Date.now() / 1000) - 400 * 86400

/** `people` people (the founder first), each with `perPerson` keys below it; their grants. */
function makeFleet(people, devicesPer, agentsPer) {
  const grants = []
  const authors = []
  for (let p = 0; p < people; p++) {
    const personSk = p === 0 ? founderSk : generateSecretKey()
    if (p > 0)
      grants.push(
        signGrant(
          { subject: getPublicKey(personSk), role: 'owner', fleet: founder },
          founderSk,
          personSk,
          grantTime,
        ),
      )
    const personGrant = p > 0 ? grants.at(-1).id : undefined
    for (let d = 0; d < devicesPer; d++) {
      const sk = generateSecretKey()
      const g = signGrant(
        {
          subject: getPublicKey(sk),
          role: 'device',
          fleet: founder,
          deleg: true,
          ...(personGrant ? { parent: personGrant } : {}),
        },
        personSk,
        sk,
        grantTime,
      )
      grants.push(g)
      authors.push({ sk, pk: getPublicKey(sk), agent: false })
      for (let a = 0; a < (d === 0 ? agentsPer : 0); a++) {
        const ask = generateSecretKey()
        grants.push(
          signGrant(
            { subject: getPublicKey(ask), role: 'agent', fleet: founder, parent: g.id },
            sk,
            ask,
            grantTime,
          ),
        )
        authors.push({ sk: ask, pk: getPublicKey(ask), agent: true })
      }
    }
  }
  return { grants, authors }
}

// ---- size -------------------------------------------------------------------------------------

async function connectAll(relay, n, sk = founderSk) {
  return Promise.all(Array.from({ length: n }, () => connect(relay.url, sk, { quietMs: 100 })))
}

/** Warm query passes per relay at each measured checkpoint, alternating between the relays. */
const WARM_ROUNDS = 2

/** Per shape, the round with the lowest p50 (its p95 and p99 with it). */
function bestRound(rounds) {
  const out = {}
  for (const name of Object.keys(rounds[0] ?? {})) {
    out[name] = rounds.map((r) => r[name]).reduce((a, b) => (b.p50_ms < a.p50_ms ? b : a))
  }
  return out
}

function shapesFor(header, ids, n) {
  const { authors, base } = header
  return {
    id: (i) => ({ ids: [ids[(i * 7919) % n]] }),
    author_limit20: (i) => ({ authors: [authors[i % authors.length].pubkey], limit: 20 }),
    kind_limit100: () => ({ kinds: [7], limit: 100 }),
    tag_limit50: (i) => ({ '#h': [channels[i % channels.length]], limit: 50 }),
    window_limit500: (i) => {
      const since = base + SPACING * ((i * 104729) % Math.max(1, n - 2000))
      return { since, until: since + SPACING * 1000, limit: 500 }
    },
  }
}

async function sizeRun(relays, history, measure) {
  const rows = []
  const ids = []
  const state = new Map()
  for (const relay of relays) {
    await relay.start()
    const conns = await connectAll(relay, CONNS)
    // The grants first: a kith hub takes a device's events only once its authority is known.
    for (const g of history.grants) await publishOne(conns[0], g)
    state.set(relay, { conns, peak: 0 })
  }
  let done = 0
  for (const cp of checkpoints) {
    const t0 = performance.now()
    const lastSlice = new Map()
    const stepCpu = new Map(relays.map((r) => [r, r.pid ? threadCpu(r.pid) : {}]))
    while (done < cp) {
      const to = Math.min(cp, done + SLICE)
      const events = await history.nextSlice(to - done)
      for (const e of events) ids.push(e.id)
      for (const relay of relays) {
        const s = state.get(relay)
        const run = await pump(s.conns, events, INFLIGHT)
        if (run.refused > 0)
          throw new Error(`${relay.name}: ${run.refused} refused: ${run.firstRefusal}`)
        lastSlice.set(relay, { ...run, n: events.length, load: load() })
      }
      done = to
      if (done % 100_000 === 0 || done === cp) progress(`${done} events in each relay`)
    }
    progress(`checkpoint ${cp}: ${((performance.now() - t0) / 1000).toFixed(0)} s for this step`)
    const measured = []
    for (const relay of relays) {
      const s = state.get(relay)
      const slice = lastSlice.get(relay)
      const row = {
        relay: relay.name,
        events: cp,
        load_average: slice.load,
        ingest_last_slice: {
          events: slice.n,
          events_per_s: Math.round(slice.n / slice.seconds),
          ok_ms: summary(Array.from(slice.latencies)),
        },
        relay_cpu_s_this_step: relay.pid ? cpuSpent(stepCpu.get(relay), threadCpu(relay.pid)) : [],
        memory_after_ingest: memoryOf(relay.pid),
        db_bytes: relay.dbBytes(),
      }
      if (!measure) {
        rows.push(row)
        continue
      }
      if (relay.restartable) {
        for (const c of s.conns) c.close()
        await relay.stop()
        row.startup_ms = round(await relay.start(), 1)
        s.conns = await connectAll(relay, CONNS)
        row.queries_cold = await timeShapes(s.conns[0], shapesFor(history.header, ids, cp), Q)
      }
      measured.push({ relay, row })
    }
    // Warm passes alternate between the relays, WARM_ROUNDS each: one pass a relay measured
    // right after the other's ingest or restart met a busier machine than the next (issue 34's
    // single passes differed by up to 40% between runs). Each shape's figure is its best round.
    const rounds = new Map(measured.map((m) => [m.relay, []]))
    for (let r = 0; r < WARM_ROUNDS; r++) {
      for (const { relay } of measured) {
        const s = state.get(relay)
        rounds.get(relay).push(await timeShapes(s.conns[0], shapesFor(history.header, ids, cp), Q))
      }
    }
    for (const { relay, row } of measured) {
      row.queries_warm = bestRound(rounds.get(relay))
      row.queries_warm_rounds = rounds.get(relay)
      row.memory_after_queries = memoryOf(relay.pid)
      row.load_average_after = load()
      rows.push(row)
      progress(`${relay.name} at ${cp}: measured`)
      // Each checkpoint kept as it is measured: a 1M run cut short keeps its 10k and 100k rows.
      if (only !== 'catchup') {
        report.size = rows
        saveReport()
      }
    }
  }
  return { rows, ids, state }
}

// ---- catch-up ---------------------------------------------------------------------------------

async function catchUp(relay, history, ids) {
  const { base } = history.header
  const ws = openSocket(relay.url)
  const client = await RelayClient.connect(ws, { url: relay.url, timeoutMs: 120_000 })
  const challenge = await client.challenge(500)
  if (challenge !== undefined) {
    const ok = await client.auth(signAuthEvent(relay.url, challenge, founderSk))
    if (!ok.ok) throw new Error(`AUTH refused: ${ok.message}`)
  }
  const missing = new Set(ids.filter((_, i) => i % 100 === 50))
  const mine = []
  ids.forEach((id, i) => {
    if (!missing.has(id)) mine.push({ id, created_at: base + SPACING * i })
  })
  for (const g of history.grants) mine.push({ id: g.id, created_at: g.created_at })
  const socket = ws._socket
  const cpu0 = relay.pid ? threadCpu(relay.pid) : {}
  const r0 = socket.bytesRead
  const w0 = socket.bytesWritten
  const t0 = performance.now()
  let result
  try {
    result = await reconcile(client, { since: 0 }, mine, 300_000)
  } catch (err) {
    client.close()
    return { relay: relay.name, error: String(err.message ?? err), load_average: load() }
  }
  const t1 = performance.now()
  const r1 = socket.bytesRead
  const w1 = socket.bytesWritten
  let got = 0
  await fetchIds(
    client,
    result.need,
    (events) => {
      got += events.length
      return Promise.resolve()
    },
    120_000,
  )
  const t2 = performance.now()
  const row = {
    relay: relay.name,
    events_at_relay: ids.length + history.grants.length,
    held_by_node: mine.length,
    missing: missing.size,
    found: result.need.length,
    found_exactly_the_missing:
      result.need.length === missing.size && result.need.every((id) => missing.has(id)),
    fetched: got,
    rounds: result.rounds,
    reconcile_s: round((t1 - t0) / 1000, 2),
    fetch_s: round((t2 - t1) / 1000, 2),
    total_s: round((t2 - t0) / 1000, 2),
    reconcile_bytes: { down: r1 - r0, up: w1 - w0 },
    relay_cpu_s: relay.pid ? cpuSpent(cpu0, threadCpu(relay.pid)) : [],
    total_bytes: { down: socket.bytesRead - r0, up: socket.bytesWritten - w0 },
    load_average: load(),
  }
  client.close()
  return row
}

// ---- devices ----------------------------------------------------------------------------------

/** A member posting `n` events one at a time to `ch`: EVENT→OK ms. */
async function postSeries(ws, author, ch, n, tag) {
  const samples = []
  for (let i = 0; i < n; i++) {
    const e = finalizeEvent(
      {
        kind: 9,
        created_at: Math.floor(Date.now() / 1000),
        tags: [['h', ch]],
        content: `${tag} ${i}`,
      },
      author.sk,
    )
    const t = performance.now()
    await publishOne(ws, e)
    samples.push(performance.now() - t)
  }
  return summary(samples)
}

async function devicesRun(relay) {
  const people = Math.ceil(D / 50)
  progress(`${relay.name}: devices: granting ${D} device keys of ${people} people`)
  const fleet = makeFleet(people, Math.ceil(D / people), 0)
  const poster = makeFleet(1, 1, 0)
  await relay.start()
  const admin = await connect(relay.url, founderSk, { quietMs: 100 })
  for (const g of [...fleet.grants, ...poster.grants, ...(relay.extraGrants ?? [])])
    await publishOne(admin, g)
  await relay.afterGrants?.(fleet.authors.at(-1).sk)
  // Peered hubs: connections two by two to each hub in turn, so each holds half the
  // connections and half the subscribers; the member posts at the first.
  const hubs = relay.hubs ?? [relay]
  const memory = () => sumMemory(hubs.map((h) => memoryOf(h.pid)))
  const member = await connect(relay.url, poster.authors[0].sk, { quietMs: 100 })
  const K = 200
  const idle = await postSeries(member, poster.authors[0], 'quiet', K, 'idle')
  const before = memory()
  progress(`${relay.name}: opening ${D} connections`)
  const held = []
  const subscribers = []
  const delivered = new Map()
  for (let i = 0; i < D; i += 20) {
    const batch = fleet.authors.slice(i, Math.min(D, i + 20))
    const socks = await Promise.all(
      batch.map((a, j) =>
        connect(hubs[Math.floor((i + j) / 2) % hubs.length].url, a.sk, { quietMs: 100 }),
      ),
    )
    held.push(...socks)
  }
  for (let i = 0; i < held.length; i += 2) {
    const ws = held[i]
    await new Promise((resolve) => {
      ws.on('message', (data) => {
        const msg = JSON.parse(data.toString())
        if (msg[0] === 'EOSE') resolve()
        else if (msg[0] === 'EVENT') {
          const sent = delivered.get(msg[2].id)
          if (sent) {
            sent.at.push(performance.now() - sent.t)
            if (sent.at.length === subscribers.length) sent.all()
          }
        }
      })
      ws.send(JSON.stringify(['REQ', 'busy', { kinds: [9], '#h': ['busy'], limit: 0 }]))
    })
    subscribers.push(ws)
  }
  const after = memory()
  const loaded = await postSeries(member, poster.authors[0], 'quiet', K, 'held')
  progress(`${relay.name}: fan-out to ${subscribers.length} subscribers`)
  const deliver = []
  let complete = 0
  for (let i = 0; i < 50; i++) {
    const e = finalizeEvent(
      {
        kind: 9,
        created_at: Math.floor(Date.now() / 1000),
        tags: [['h', 'busy']],
        content: `busy ${i}`,
      },
      poster.authors[0].sk,
    )
    let timer
    const entry = { t: performance.now(), at: [] }
    const all = new Promise((resolve) => {
      entry.all = resolve
      timer = setTimeout(resolve, 30_000)
    })
    delivered.set(e.id, entry)
    await publishOne(member, e)
    await all
    clearTimeout(timer)
    if (entry.at.length === subscribers.length) complete++
    deliver.push(...entry.at)
  }
  const row = {
    relay: relay.name,
    hubs: hubs.length,
    connections: held.length,
    subscribers: subscribers.length,
    authenticated: relay.name.startsWith('kith')
      ? 'every connection (NIP-42, a device key each)'
      : 'none asked',
    rss_before_mb: before,
    rss_held_mb: after,
    rss_per_connection_kb: round(((after.rss_mb - before.rss_mb) * 1024) / held.length, 1),
    anon_per_connection_kb: round(
      ((after.rss_anon_mb - before.rss_anon_mb) * 1024) / held.length,
      1,
    ),
    event_ok_idle_ms: idle,
    event_ok_held_ms: loaded,
    held_over_idle_p99: round(loaded.p99 / idle.p99, 2),
    deliver_ms: summary(deliver),
    deliveries: deliver.length,
    posts_delivered_to_all: `${complete}/50`,
    load_average: load(),
  }
  for (const ws of [...held, member, admin]) ws.close()
  await relay.stop()
  return row
}

/** The memory of several processes added up (each field summed; per process in `each`). */
function sumMemory(list) {
  const out = {}
  for (const m of list) for (const [k, v] of Object.entries(m)) out[k] = round((out[k] ?? 0) + v, 1)
  return list.length > 1 ? { ...out, each: list } : out
}

// ---- plot -------------------------------------------------------------------------------------

/** Three panels by hand (no plotting dependency): warm p50 per shape, RSS and ingest rate. */
function drawSvg(rows) {
  const W = 1060
  const H = 300
  const pw = 260
  const ph = 200
  const relays = [...new Set(rows.map((r) => r.relay))]
  const colour = (name) => (name === 'kith' ? '#1f77b4' : '#d62728')
  const xs = [...new Set(rows.map((r) => r.events))].sort((a, b) => a - b)
  const lx = (v) => Math.log10(v)
  const [x0, x1] = [lx(xs[0]), lx(xs.at(-1)) === lx(xs[0]) ? lx(xs[0]) + 1 : lx(xs.at(-1))]
  const panel = (px, title, unit, series, logY) => {
    const all = series.flatMap((s) => s.points.map((p) => p[1])).filter((v) => v > 0)
    if (all.length === 0) return ''
    let y0 = logY ? Math.floor(Math.log10(Math.min(...all))) : 0
    let y1 = logY ? Math.ceil(Math.log10(Math.max(...all))) : Math.max(...all) * 1.1
    if (y1 === y0) y1 = y0 + 1
    const sx = (v) => px + ((lx(v) - x0) / (x1 - x0)) * pw
    const sy = (v) => 50 + ph - (((logY ? Math.log10(v) : v) - y0) / (y1 - y0)) * ph
    let g = `<text x="${px}" y="30" font-size="13" font-weight="bold">${title}</text>`
    g += `<rect x="${px}" y="50" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`
    for (const x of xs)
      g += `<text x="${sx(x)}" y="${50 + ph + 15}" font-size="10" text-anchor="middle">${x >= 1e6 ? `${x / 1e6}M` : `${x / 1e3}k`}</text>`
    const ticks = logY
      ? Array.from({ length: y1 - y0 + 1 }, (_, i) => 10 ** (y0 + i))
      : [0, y1 / 2, y1].map((v) => round(v, 0))
    for (const t of ticks)
      g += `<text x="${px - 4}" y="${sy(t) + 3}" font-size="10" text-anchor="end">${t}</text>`
    g += `<text x="${px + pw / 2}" y="${50 + ph + 30}" font-size="10" text-anchor="middle">events stored (${unit})</text>`
    for (const s of series) {
      const pts = s.points.filter((p) => p[1] > 0)
      if (pts.length === 0) continue
      g += `<polyline fill="none" stroke="${s.colour}" stroke-width="1.5" ${s.dash ? 'stroke-dasharray="4 3"' : ''} points="${pts.map((p) => `${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join(' ')}"/>`
      const last = pts.at(-1)
      g += `<text x="${sx(last[0]) + 3}" y="${sy(last[1]) + 3}" font-size="9" fill="${s.colour}">${s.label}</text>`
    }
    return g
  }
  const seriesOf = (pick, label) =>
    relays.flatMap((rel) =>
      pick.map(([key, fn, dash]) => ({
        label: `${label(rel)} ${key}`,
        colour: colour(rel),
        dash,
        points: rows.filter((r) => r.relay === rel).map((r) => [r.events, fn(r) ?? 0]),
      })),
    )
  const short = (rel) => (rel === 'kith' ? 'kith' : 'other')
  let body = panel(
    50,
    'REQ p50, warm (ms, log)',
    'log',
    seriesOf(
      [
        ['window', (r) => r.queries_warm?.window_limit500.p50_ms, false],
        ['tag', (r) => r.queries_warm?.tag_limit50.p50_ms, true],
      ],
      short,
    ),
    true,
  )
  body += panel(
    390,
    'RSS after queries (MB)',
    'log',
    seriesOf(
      [
        [
          'anon',
          (r) => r.memory_after_queries?.rss_anon_mb ?? r.memory_after_ingest?.rss_anon_mb,
          false,
        ],
        [
          'file',
          (r) => r.memory_after_queries?.rss_file_mb ?? r.memory_after_ingest?.rss_file_mb,
          true,
        ],
      ],
      short,
    ),
    false,
  )
  body += panel(
    730,
    'ingest, last slice (events/s)',
    'log',
    seriesOf([['', (r) => r.ingest_last_slice.events_per_s, false]], short),
    false,
  )
  const legend = relays
    .map(
      (rel, i) =>
        `<text x="${50 + i * 200}" y="${H - 5}" font-size="11" fill="${colour(rel)}">${rel === 'kith' ? 'kith hub' : rel} (${short(rel)})</text>`,
    )
    .join('')
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif">
<rect width="${W}" height="${H}" fill="white"/>
${body}
${legend}
</svg>
`
}

// ---- run --------------------------------------------------------------------------------------

// --plot REPORT.json only draws the SVG again from a saved report.
if (values.plot !== undefined) {
  const { readFileSync } = await import('node:fs')
  writeFileSync(values.svg, drawSvg(JSON.parse(readFileSync(values.plot, 'utf8')).size))
  rmSync(dir, { recursive: true, force: true })
  process.exit(0)
}

const report = {
  bench: 'scale',
  node: process.version,
  cores: availableParallelism(),
  max_events: MAX,
  queries_per_shape_per_pass: Q,
  client: 'one Node process, ws without permessage-deflate (scripts/bench-relay.js)',
  load_average_at_start: loadavg().map((l) => round(l, 2)),
}
const saveReport = () => {
  if (values.report !== undefined) writeFileSync(values.report, JSON.stringify(report, null, 2))
}
const t0 = performance.now()
if (only === 'history') {
  const history = await openHistory({ seed: SEED, count: MAX, cacheDir: values.cache, progress })
  history.close()
  rmSync(dir, { recursive: true, force: true })
  process.exit(0)
}
if (only === undefined || only === 'size' || only === 'catchup') {
  progress(`fleet: 20 people, 60 devices and agents; history to ${MAX} events`)
  const tHistory = performance.now()
  const history = await openHistory({ seed: SEED, count: MAX, cacheDir: values.cache, progress })
  report.history = {
    seed: SEED,
    events: MAX,
    grants: history.grants.length,
    first_created_at: history.header.base,
    ready_s: round((performance.now() - tHistory) / 1000, 1),
  }
  const relays = [kithRelay('size-kith', founder)]
  const other = otherRelay('size-other')
  if (other) relays.push(other)
  const size = await sizeRun(relays, history, only !== 'catchup')
  history.close()
  if (only !== 'catchup') report.size = size.rows
  saveReport()
  if (only === undefined || only === 'catchup') {
    report.catchup = []
    for (const relay of relays) {
      for (const c of size.state.get(relay).conns) c.close()
      progress(`${relay.name}: catch-up of 1% of ${size.ids.length}`)
      report.catchup.push(await catchUp(relay, history, size.ids))
      saveReport()
    }
  }
  for (const relay of relays) await relay.stop()
}
if (only === undefined || only === 'devices') {
  report.devices = []
  const relays = [kithRelay('devices-kith', founder)]
  const other = otherRelay('devices-other')
  if (other) relays.push(other)
  if (!values['no-peered']) relays.push(peeredKithRelays('devices-peered', founder))
  for (const relay of relays) {
    report.devices.push(await devicesRun(relay))
    saveReport()
  }
}
report.seconds = round((performance.now() - t0) / 1000, 1)
saveReport()
report.load_average_at_end = loadavg().map((l) => round(l, 2))
if (report.size) writeFileSync(values.svg, drawSvg(report.size))
rmSync(dir, { recursive: true, force: true })
console.log(JSON.stringify(report, null, 2))
