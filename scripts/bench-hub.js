// npm run bench:hub [-- --events N --connections C --inflight F --queries Q --sync full|normal
//                      --workers W --only owner|agents --agents A --verify auto|native|wasm
//                      --against ws://HOST:PORT [--against-pid PID] [--key HEX]]
// Ingest throughput and query latency of a real `kith hub` subprocess; prints JSON. Queries:
// Q REQs of each shape, one at a time, in two passes: `queries` is the second (steady state),
// `queries_first_pass` the first.
// Two ingest runs, each on a fresh hub: events authored by the founder (owner), and events
// authored by A agents (default 10) two grants below the founder (founder → device(deleg) → agent), to
// measure what grant-chain authorization costs. Queries are timed on the owner run's hub.
// --verify sets the hub's KITH_VERIFY. --against runs the owner load (same events, connections,
// in-flight and queries) against another relay instead of a kith hub, e.g. strfry, so the two
// compare in one command; --against-pid names its process for the peak RSS.
import { mkdtempSync, rmSync } from 'node:fs'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { initNostrWasm } from 'nostr-wasm'
import { setNostrWasm, finalizeEvent, verifyEvent } from 'nostr-tools/wasm'
import { generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import { hexToBytes } from '@noble/hashes/utils.js'
import { signGrant } from '../dist/grants/grant.js'
import { loadNativeVerifier } from '../dist/verify/native.js'
import { spawnHub } from './hub-process.js'
import {
  connect as connectRelay,
  cpuSpent,
  memoryOf,
  publishOne,
  pump,
  round,
  summary,
  threadCpu,
  timeShapes,
} from './bench-relay.js'
import { scriptArgs } from './script-args.js'

const { values } = scriptArgs(import.meta.url, {
  events: { type: 'string', default: '20000' },
  connections: { type: 'string', default: '4' },
  inflight: { type: 'string', default: '64' },
  queries: { type: 'string', default: '200' },
  sync: { type: 'string', default: 'full' },
  workers: { type: 'string' },
  only: { type: 'string' },
  agents: { type: 'string', default: '10' },
  verify: { type: 'string' },
  against: { type: 'string' },
  'against-pid': { type: 'string' },
  key: { type: 'string' },
})
const against = values.against
// Another relay knows nothing of kith's grants: only the owner run applies.
if (against !== undefined) values.only = 'owner'
const N = Number(values.events)
const C = Number(values.connections)
const F = Number(values.inflight)
const Q = Number(values.queries)

setNostrWasm(await initNostrWasm())
const progress = (s) => process.stderr.write(`bench:hub ${s}\n`)
// Single-core verify rate of nostr-tools/wasm, measured in this run: the yardstick that makes
// results from different machines comparable.
function verifyRate(events) {
  const sample = events.slice(0, 3000).map((e) => ({ ...e }))
  const t0 = performance.now()
  for (const e of sample) if (!verifyEvent(e)) throw new Error('self-signed event failed to verify')
  return sample.length / ((performance.now() - t0) / 1000)
}

// The same for the native libsecp256k1 the hub uses where it is installed (undefined if not).
function nativeVerifyRate(events) {
  const native = loadNativeVerifier()
  if (native === undefined) return undefined
  const sample = events.slice(0, 3000)
  const t0 = performance.now()
  for (const e of sample)
    if (native.verify(e) !== 'ok') throw new Error('self-signed event failed to verify')
  return sample.length / ((performance.now() - t0) / 1000)
}

const dir = mkdtempSync(join(tmpdir(), 'kith-bench-'))
// --key (hex) signs as that founder: a kith hub started apart (--against) must know its owner.
const founderSk = values.key === undefined ? generateSecretKey() : hexToBytes(values.key)
const founder = getPublicKey(founderSk)
const deviceSk = generateSecretKey()
const agentSks = Array.from({ length: Number(values.agents) }, () => generateSecretKey())
const now = Math.floor(Date.now() / 1000)
// Grants carry the subject's proof now (signGrant makes it, holding both keys).
const deviceGrant = signGrant(
  { subject: getPublicKey(deviceSk), role: 'device', fleet: founder, deleg: true },
  founderSk,
  deviceSk,
  now,
)
const agentGrants = agentSks.map((sk) =>
  signGrant(
    { subject: getPublicKey(sk), role: 'agent', fleet: founder, parent: deviceGrant.id },
    deviceSk,
    sk,
    now,
  ),
)
const topics = Array.from({ length: 50 }, (_, i) => `topic${i}`)
const base = now - N

function signAll(authorOf) {
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
        authorOf(i),
      ),
    )
  }
  return events
}

// Another relay may not ask for AUTH (strfry does not by default): open and a quiet quarter
// second are enough there; one that asks gets the same AUTH as a kith hub.
const connect = (url, sk) => connectRelay(url, sk, { quietMs: 250 })

async function ingest(label, events) {
  const hubArgs = [
    '--db',
    join(dir, `${label}.db`),
    '--owner',
    founder,
    '--rate',
    '0',
    '--sync',
    values.sync,
  ]
  if (values.workers !== undefined) hubArgs.push('--workers', values.workers)
  const hub =
    against === undefined
      ? await spawnHub(hubArgs, {
          env: {
            KITH_HOME: join(dir, 'home'),
            ...(values.verify === undefined ? {} : { KITH_VERIFY: values.verify }),
          },
        })
      : {
          url: against,
          child: {
            pid: values['against-pid'] === undefined ? undefined : Number(values['against-pid']),
          },
          stderr: () => '',
          stop: async () => undefined,
        }
  const conns = await Promise.all(Array.from({ length: C }, () => connect(hub.url, founderSk)))
  for (const g of [deviceGrant, ...agentGrants]) await publishOne(conns[0], g)
  progress(`${label}: ingesting ${N} events over ${C} connections, ${F} in flight each`)
  const cpuBefore = hub.child.pid === undefined ? {} : threadCpu(hub.child.pid)
  const selfBefore = process.cpuUsage()
  const { seconds, latencies, refused, firstRefusal } = await pump(conns, events, F)
  if (refused > 0)
    throw new Error(`${label}: ${refused} events refused during ingest: ${firstRefusal}`)
  const hubCpu = hub.child.pid === undefined ? [] : cpuSpent(cpuBefore, threadCpu(hub.child.pid))
  const selfCpu = process.cpuUsage(selfBefore)
  return {
    hub,
    conns,
    result: {
      ...(against === undefined
        ? { verifier: /verifier: (.*)/.exec(hub.stderr())?.[1] ?? 'unknown' }
        : { relay: against }),
      events_per_s: Math.round(N / seconds),
      seconds: round(seconds, 2),
      ok_latency_ms: summary(Array.from(latencies)),
      hub_cpu_s_by_thread: hubCpu,
      client_cpu_s: round((selfCpu.user + selfCpu.system) / 1e6, 2),
    },
  }
}

async function timeQueries(ws, events) {
  const pick = (i) => events[(i * 7919) % N]
  const shapes = {
    id: (i) => ({ ids: [pick(i).id] }),
    author_limit20: () => ({ authors: [founder], limit: 20 }),
    kind_limit100: () => ({ kinds: [7], limit: 100 }),
    tag_limit50: (i) => ({ '#h': [topics[i % topics.length]], limit: 50 }),
    window_limit500: (i) => {
      const since = base + ((i * 104729) % Math.max(1, N - 2000))
      return { since, until: since + 1000, limit: 500 }
    },
  }
  // Two passes over the shapes, both reported: the first meets code neither process has run yet
  // (a JIT's first runs, on the client too), so its first shape paid for that and the order of the
  // shapes moved its numbers; the second is the steady state a long-running relay serves.
  const pass = () => timeShapes(ws, shapes, Q)
  progress('timing queries: first pass')
  const cold = await pass()
  progress('timing queries: second pass')
  return { warm: await pass(), cold }
}

async function stop(run) {
  for (const c of run.conns) c.close()
  await run.hub.stop()
}

const report = {
  bench: 'hub',
  node: process.version,
  cores: availableParallelism(),
  events: N,
  connections: C,
  in_flight_per_connection: F,
  sync: values.sync,
  load_average_at_start: loadavg().map((l) => round(l, 2)),
}
let verifyPerSec
let verifySample
let ownerRate
if (values.only !== 'agents') {
  progress(`signing ${N} owner events`)
  const ownerEvents = signAll(() => founderSk)
  verifyPerSec = verifyRate(ownerEvents)
  verifySample = ownerEvents
  const run = await ingest('owner', ownerEvents)
  report.ingest = run.result
  ownerRate = run.result.events_per_s
  const queries = await timeQueries(run.conns[0], ownerEvents)
  report.queries = queries.warm
  report.queries_first_pass = queries.cold
  Object.assign(report, memoryOf(run.hub.child.pid))
  await stop(run)
}
if (values.only !== 'owner') {
  progress(`signing ${N} events by ${agentSks.length} agents (founder → device → agent)`)
  const agentEvents = signAll((i) => agentSks[i % agentSks.length])
  verifyPerSec ??= verifyRate(agentEvents)
  verifySample ??= agentEvents
  const run = await ingest('agents', agentEvents)
  report.ingest_by_agents = {
    ...run.result,
    chain: 'founder → device (deleg) → agent',
    agents: agentSks.length,
    ...(ownerRate ? { ratio_to_owner: round(run.result.events_per_s / ownerRate, 3) } : {}),
  }
  await stop(run)
}
const nativePerSec = nativeVerifyRate(verifySample)
report.load_average_at_end = loadavg().map((l) => round(l, 2))
report.baseline = {
  verify_per_s_single_core: Math.round(verifyPerSec),
  verifier: 'nostr-tools/wasm (libsecp256k1)',
  ...(nativePerSec === undefined
    ? {}
    : { native_verify_per_s_single_core: Math.round(nativePerSec) }),
  ingest_over_verify: round(
    (report.ingest?.events_per_s ?? report.ingest_by_agents.events_per_s) / verifyPerSec,
    2,
  ),
}
rmSync(dir, { recursive: true, force: true })
console.log(JSON.stringify(report, null, 2))
