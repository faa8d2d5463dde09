// npm run bench:abuse [-- --seconds S --warm-up S --stored N --only ROW,ROW --attacker-nice N
//   --sync full|normal]
// What strangers and greedy members cost the others: a real `kith hub` subprocess (its default
// limits, rate limits included), one honest
// member publishing an event and sending a small REQ every 20 ms, timed (OK and EOSE latency),
// first quiet and then during each abuse in turn:
//   auth-flood   strangers send forged AUTH frames naming the founder's key (they pass every
//                cheap check; only the signature fails), ~1.6 MB/s, reconnecting when closed;
//   req-flood    another member (the plain one, a person apart from the honest member, as
//                every member abuse here) re-sends REQ with 10 filters × limit 5000 under one
//                id, reading;
//   never-reads  that member sends that REQ and stops reading its socket;
//   idle-strangers  400 connections that never authenticate, from 20 other loopback addresses;
//   lane-squatters  strangers holding pairing-room connections from 8 addresses and the member's
//                own, re-opened as closed, as fast as the hub lets them (every 10 ms after a 429):
//                the per-address connection rate answers most with 429 before a WebSocket
//                exists (a second after each arrives: over_rate_answer_delay_ms), while the
//                member, carrying a connect ticket, is never charged (issue 30, item 5);
//   held-revocations  a plain member publishing revocations naming as many keys as one may (256,
//                maxRevocationTargets), 50/s (item 1);
//   tag-flood    that member posting messages of 1000 `p` tags (each a row of the hub's tag index),
//                every 5 ms: its bucket charges 1 token per 10 such tags;
//   neg-flood    that member re-opening NIP-77 reconciliations over every stored event on 4
//                connections (item 4).
// (Items 2 and 3, a node's pending set and a peer bridge, have no hub-side row: their bounds are
// counted, not timed; see test/grants/verifier.test.ts and test/link/peer-sync.test.ts.)
// Each abuse runs in its own child process (this script with --attacker NAME): the lane
// squatters alone are 288 connection loops, and run beside the honest member they would time
// their own event loop, not the hub's.
// Prints JSON: per phase the honest member's p50/p95/p99 latencies, the hub's RSS and CPU ms per
// second, the machine's load average at the phase's start and end, and what the hub did to the
// abuser (closed or not).
// The `quiet` phase is the honest member alone: the in-run baseline each other row compares to
// (after an unreported warm-up, `--warm-up S`); `busy-machine` is the control: the attacker's
// process spins a core and sends the hub nothing. `quiet-again`, the honest member alone at the
// end, is not a second idle baseline: on this VM the CPU runs faster for a while after load (a
// spinner alone took quiet-again from 4.1 to 2.8 ms; docs/performance.md, session 5).
import { fork } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, setPriority, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import WebSocket from 'ws'
import { finalizeEvent, generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import { nip77 } from 'nostr-tools'
import { signAuthEvent } from '../dist/events/nip42.js'
import { withConnectTicket } from '../dist/events/connect-ticket.js'
import { signGrant } from '../dist/grants/grant.js'
import { makeRevocation, maxRevocationTargets } from '../dist/grants/revocation.js'
import { signEvent } from '../dist/events/event.js'
import { spawnHub } from './hub-process.js'
import { scriptArgs } from './script-args.js'

const { values } = scriptArgs(import.meta.url, {
  seconds: { type: 'string', default: '6' },
  stored: { type: 'string', default: '6000' },
  only: { type: 'string' },
  attacker: { type: 'string' },
  'attacker-nice': { type: 'string', default: '0' },
  // Seconds of honest traffic before the first reported phase (default: min(seconds, 5)).
  'warm-up': { type: 'string' },
  // The hub's --sync. With `normal` an OK no longer waits for the WAL's fsync, so a run with it
  // beside one with `full` separates the disk's jitter from the hub's own.
  sync: { type: 'string', default: 'full' },
})
if (values.sync !== 'full' && values.sync !== 'normal') {
  process.stderr.write(`bench:abuse: --sync is full or normal, got ${values.sync}\n`)
  process.exit(2)
}
const attackerNice = Number(values['attacker-nice'])
const seconds = Number(values.seconds)
const warmUp = values['warm-up'] === undefined ? Math.min(seconds, 5) : Number(values['warm-up'])
const progress = (s) => process.stderr.write(`bench:abuse ${s}\n`)
const round = (x, d = 2) => Math.round(x * 10 ** d) / 10 ** d
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? null : round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))])
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

const hexOf = (b) => Buffer.from(b).toString('hex')
const bytesOf = (h) => Uint8Array.from(Buffer.from(h, 'hex'))

/** In an attacker child: the parent's hub and keys, sent over IPC before anything runs. */
const given = values.attacker
  ? await new Promise((resolve) => process.once('message', resolve))
  : undefined
const dir = given ? undefined : mkdtempSync(join(tmpdir(), 'kith-abuse-'))
const founderSk = given ? bytesOf(given.founderSk) : generateSecretKey()
const founder = getPublicKey(founderSk)
const hub = given
  ? { url: given.url }
  : await spawnHub(['--db', join(dir, 'hub.db'), '--owner', founder, '--sync', values.sync], {
      env: { KITH_HOME: join(dir, 'home') },
    })
// A hub left busy by an abuse may not stop on SIGTERM in time; never leave it running, nor after
// this script fails.
process.on('exit', () => hub.child?.kill('SIGKILL'))
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    hub.child?.kill('SIGKILL')
    process.exit(130)
  })
}
/** CPU time the hub process has used, in ms (utime + stime of /proc/PID/stat, 100 ticks/s). */
const hubCpuMs = () => {
  const fields = readFileSync(`/proc/${hub.child.pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}
const rssMb = () => {
  const s = readFileSync(`/proc/${hub.child.pid}/status`, 'utf8')
  return round(Number(/VmRSS:\s+(\d+)/.exec(s)?.[1] ?? 0) / 1024, 1)
}

/**
 * A connection; `auth` authenticates it as the founder (or `sk`), carrying a connect ticket as a
 * member's node does, so the per-address connection rate never charges it. Resolves once open
 * (and authed).
 */
function open({ auth = true, url = hub.url, localAddress = undefined, sk = founderSk } = {}) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(auth ? withConnectTicket(url, sk) : url, {
      maxPayload: 64 * 1024 * 1024,
      ...(localAddress ? { localAddress } : {}),
    })
    ws.once('error', reject)
    ws.on('message', function first(data) {
      const msg = JSON.parse(data.toString())
      if (msg[0] !== 'AUTH') return
      ws.challenge = msg[1]
      if (!auth) {
        ws.off('message', first)
        resolve(ws)
        return
      }
      const e = signAuthEvent(url, msg[1], sk)
      ws.on('message', function ok(d) {
        const m = JSON.parse(d.toString())
        if (m[0] === 'OK' && m[1] === e.id) {
          ws.off('message', ok)
          ws.off('message', first)
          resolve(ws)
        }
      })
      ws.send(JSON.stringify(['AUTH', e]))
    })
  })
}

// Stored events for the REQ abuses: `stored` kind-9 events of ~300 bytes. The hub runs with its
// default rate limits (a person may send a burst of 1000, then 100/s), so they are written by
// several people, each admitted by the founder, at most `perAuthor` each.
if (!given) {
  progress(`storing ${values.stored} events`)
  const ws = await open()
  const answers = new Map()
  ws.on('message', (d) => {
    const m = JSON.parse(d.toString())
    if (m[0] === 'OK') answers.get(m[1])?.(m)
  })
  // In windows under the hub's max_pending_verifications (256 a connection).
  const publishAll = async (events) => {
    for (let i = 0; i < events.length; i += 200) {
      await Promise.all(
        events.slice(i, i + 200).map(
          (e) =>
            new Promise((resolve, reject) => {
              answers.set(e.id, (m) =>
                m[2] ? resolve() : reject(new Error(`history refused: ${m[3]}`)),
              )
              ws.send(JSON.stringify(['EVENT', e]))
            }),
        ),
      )
    }
  }
  const n = Number(values.stored)
  const perAuthor = 900
  const authors = Array.from({ length: Math.ceil(n / perAuthor) }, () => generateSecretKey())
  const base = Math.floor(Date.now() / 1000) - n
  await publishAll(
    authors.map((sk) =>
      signGrant({ subject: getPublicKey(sk), role: 'owner', fleet: founder }, founderSk, sk, base),
    ),
  )
  await publishAll(
    Array.from({ length: n }, (_, i) =>
      finalizeEvent(
        { kind: 9, created_at: base + i, tags: [['h', 'big']], content: `${i} ${'x'.repeat(240)}` },
        authors[Math.floor(i / perAuthor)],
      ),
    ),
  )
  ws.close()
}

const timeout = (ms) => sleep(ms).then(() => undefined)

/** Seconds until the hub answers a member again (connect, AUTH, a small REQ), at most `capS`. */
async function stallSeconds(capS) {
  const t0 = Date.now()
  const answered = (async () => {
    const ws = await open()
    await new Promise((resolve) => {
      ws.on('message', (d) => JSON.parse(d.toString())[0] === 'EOSE' && resolve())
      ws.send(JSON.stringify(['REQ', 'ping', { limit: 1 }]))
    })
    ws.close()
  })()
  const ok = await Promise.race([answered.then(() => true), timeout(capS * 1000)])
  return ok ? round((Date.now() - t0) / 1000, 2) : `> ${capS}`
}

/** The honest member: an EVENT and a small REQ every 20 ms, each timed to its answer. */
async function honest(ms) {
  const ws = await Promise.race([open(), timeout(ms)])
  if (ws === undefined) return { stalled: `could not even authenticate in ${ms / 1000} s` }
  const ok = []
  const eose = []
  const pending = new Map()
  ws.on('message', (d) => {
    const m = JSON.parse(d.toString())
    const key = m[0] === 'OK' ? m[1] : m[0] === 'EOSE' || m[0] === 'CLOSED' ? m[1] : undefined
    const t = key === undefined ? undefined : pending.get(key)
    if (t === undefined) return
    pending.delete(key)
    ;(m[0] === 'OK' ? ok : eose).push(performance.now() - t)
  })
  const end = Date.now() + ms
  let i = 0
  while (Date.now() < end) {
    const e = finalizeEvent(
      { kind: 9, created_at: Math.floor(Date.now() / 1000), tags: [], content: `honest ${i}` },
      founderSk,
    )
    pending.set(e.id, performance.now())
    ws.send(JSON.stringify(['EVENT', e]))
    const sub = `h${i++}`
    pending.set(sub, performance.now())
    ws.send(JSON.stringify(['REQ', sub, { '#h': ['big'], limit: 5 }]))
    await sleep(20)
  }
  await sleep(200)
  ws.close()
  return {
    ok_p50_ms: pct(ok, 50),
    ok_p95_ms: pct(ok, 95),
    ok_p99_ms: pct(ok, 99),
    req_p50_ms: pct(eose, 50),
    req_p95_ms: pct(eose, 95),
    answered: `${ok.length + eose.length}/${2 * i}`,
  }
}

const abuses = {
  quiet: async () => () => ({}),
  // The control row: nothing reaches the hub, but the machine is as busy as under an abuse (one
  // core spun by the attacker's process). On a VM this machine's CPU runs slower when mostly idle
  // (a fixed hash took 1.34 ms idle, 0.81 ms with both cores busy, docs/performance.md), so what a
  // row costs the honest member is read against this row as well as against `quiet`.
  'busy-machine': async () => {
    let stop = false
    let spins = 0
    const spin = async () => {
      while (!stop) {
        const end = performance.now() + 50
        while (performance.now() < end) spins++
        await new Promise((r) => setImmediate(r))
      }
    }
    const done = spin()
    return async () => {
      stop = true
      await done
      return { spins }
    }
  },
  'auth-flood': async () => {
    let stop = false
    let closedByHub = 0
    let frames = 0
    const loops = Array.from({ length: 4 }, async (_, n) => {
      while (!stop) {
        const ws = await open({ auth: false, localAddress: `127.0.1.${n + 1}` }).catch(
          () => undefined,
        )
        if (ws === undefined) {
          await sleep(10)
          continue
        }
        const forged = { ...signAuthEvent(hub.url, ws.challenge, founderSk), sig: 'cd'.repeat(64) }
        const frame = JSON.stringify(['AUTH', forged])
        const closed = new Promise((r) => ws.once('close', r))
        // ~400 KB/s per loop, 4 loops: ~1.6 MB/s, until the hub closes the connection.
        while (!stop && ws.readyState === WebSocket.OPEN) {
          for (let k = 0; k < 40; k++) ws.send(frame)
          frames += 40
          await sleep(40)
        }
        if (ws.readyState !== WebSocket.CLOSED) ws.terminate()
        else closedByHub++
        await closed
      }
    })
    return async () => {
      stop = true
      await Promise.all(loops)
      return { connections_closed_by_hub: closedByHub, auth_frames_sent: frames }
    }
  },
  'req-flood': async () => {
    const ws = await open({ sk: plainSk })
    const filters = Array.from({ length: 10 }, (_, i) => ({ '#h': ['big'], limit: 5000, since: i }))
    let stop = false
    let sent = 0
    const loop = (async () => {
      while (!stop && ws.readyState === WebSocket.OPEN) {
        ws.send(JSON.stringify(['REQ', 'same', ...filters]))
        sent++
        await sleep(5)
      }
    })()
    return async () => {
      stop = true
      await loop
      const closed = ws.readyState !== WebSocket.OPEN
      ws.terminate()
      return { reqs_sent: sent, closed_by_hub: closed }
    }
  },
  'never-reads': async () => {
    const ws = await open({ sk: plainSk })
    ws._socket.pause()
    const filters = Array.from({ length: 10 }, (_, i) => ({ '#h': ['big'], limit: 5000, since: i }))
    for (let i = 0; i < 50; i++) ws.send(JSON.stringify(['REQ', 'same', ...filters]))
    const closedAt = new Promise((r) => ws._socket.once('close', () => r(Date.now())))
    const t0 = Date.now()
    return async () => {
      const at = await Promise.race([closedAt, sleep(100).then(() => undefined)])
      ws.terminate()
      return { closed_by_hub_after_s: at === undefined ? null : round((at - t0) / 1000, 1) }
    }
  },
  'idle-strangers': async () => {
    const held = []
    let refused = 0
    for (let i = 0; i < 400; i++) {
      const localAddress = `127.0.0.${2 + (i % 20)}`
      const ws = await open({ auth: false, localAddress }).catch(() => undefined)
      if (ws === undefined) refused++
      else held.push(ws)
    }
    return async () => {
      const open_ = held.filter((w) => w.readyState === WebSocket.OPEN).length
      for (const w of held) w.terminate()
      return { strangers_refused_at_connect: refused, still_open_at_end: open_ }
    }
  },
}

// A plain member (an owner without deleg) for the held-revocations row.
const plainSk = given ? bytesOf(given.plainSk) : generateSecretKey()
if (!given) {
  const ws = await open()
  const grant = signGrant(
    { subject: getPublicKey(plainSk), role: 'owner', fleet: founder },
    founderSk,
    plainSk,
    Math.floor(Date.now() / 1000) - 10,
  )
  await new Promise((resolve) => {
    ws.on('message', (d) => JSON.parse(d.toString())[0] === 'OK' && resolve())
    ws.send(JSON.stringify(['EVENT', grant]))
  })
  ws.close()
}
const randomHex = () => Buffer.from(generateSecretKey()).toString('hex')
const negInitiate = () => {
  const storage = new nip77.NegentropyStorageVector()
  storage.seal()
  return new nip77.Negentropy(storage).initiate()
}

/**
 * The plain member sending `make()` every `everyMs` on one connection; the hub's answers counted
 * by their first words (`held`, `restricted: too-many-held`, `rate-limited: key`, …).
 */
async function eventFlood(everyMs, make) {
  const ws = await open({ sk: plainSk })
  let stop = false
  const answers = {}
  ws.on('message', (d) => {
    const m = JSON.parse(d.toString())
    if (m[0] !== 'OK') return
    const k = m[2]
      ? String(m[3]).split(':')[0] || 'ok'
      : String(m[3]).split(':').slice(0, 2).join(':')
    answers[k] = (answers[k] ?? 0) + 1
  })
  const loop = (async () => {
    while (!stop && ws.readyState === WebSocket.OPEN) {
      ws.send(JSON.stringify(['EVENT', make()]))
      await sleep(everyMs)
    }
  })()
  return async () => {
    stop = true
    await loop
    ws.terminate()
    return { answers }
  }
}

Object.assign(abuses, {
  'lane-squatters': async () => {
    let stop = false
    let reopened = 0
    let rateLimited = 0
    const held = new Set()
    const hold = async (localAddress) => {
      while (!stop) {
        const ws = await open({ auth: false, localAddress }).catch((err) => {
          if (/429/.test(String(err?.message))) rateLimited++
          return undefined
        })
        if (ws === undefined) {
          await sleep(10)
          continue
        }
        held.add(ws)
        ws.send(JSON.stringify(['REQ', 'pair', { kinds: [24140], '#d': [randomHex()] }]))
        await new Promise((r) => ws.once('close', r))
        held.delete(ws)
        reopened++
      }
    }
    const addresses = [...Array.from({ length: 8 }, (_, i) => `127.0.2.${i + 1}`), '127.0.0.1']
    const loops = addresses.flatMap((a) => Array.from({ length: 32 }, () => hold(a)))
    return async () => {
      stop = true
      for (const ws of held) ws.terminate()
      await Promise.all(loops)
      return { stranger_connections_reopened: reopened, upgrades_answered_429: rateLimited }
    }
  },
  'held-revocations': () =>
    eventFlood(20, () =>
      signEvent(
        makeRevocation(
          { fleet: founder, keys: Array.from({ length: maxRevocationTargets }, randomHex) },
          Math.floor(Date.now() / 1000),
        ),
        plainSk,
      ),
    ),
  'tag-flood': () =>
    eventFlood(5, () =>
      finalizeEvent(
        {
          kind: 9,
          created_at: Math.floor(Date.now() / 1000),
          tags: Array.from({ length: 1000 }, () => ['p', randomHex()]),
          content: 'tags',
        },
        plainSk,
      ),
    ),
  'neg-flood': async () => {
    const conns = await Promise.all(Array.from({ length: 4 }, () => open({ sk: plainSk })))
    let stop = false
    const answers = {}
    const loops = conns.map(async (ws, n) => {
      ws.on('message', (d) => {
        const m = JSON.parse(d.toString())
        if (m[0] !== 'NEG-MSG' && m[0] !== 'NEG-ERR') return
        const k = m[0] === 'NEG-MSG' ? 'answered' : String(m[2]).split(':')[0]
        answers[k] = (answers[k] ?? 0) + 1
      })
      let i = 0
      while (!stop && ws.readyState === WebSocket.OPEN) {
        ws.send(JSON.stringify(['NEG-OPEN', `n${n}-${i++ % 2}`, {}, negInitiate()]))
        await sleep(10)
      }
    })
    return async () => {
      stop = true
      await Promise.all(loops)
      for (const ws of conns) ws.terminate()
      return { answers }
    }
  },
})

if (given) {
  // An attacker child: start the abuse, say so, and stop it when told; the result goes back.
  const stop = await abuses[values.attacker]()
  process.send({ started: true })
  await new Promise((resolve) => process.once('message', resolve))
  process.send({ result: await stop() })
  process.disconnect()
  // Sockets a stopped abuse left to the hub to close do not keep the child.
  setTimeout(() => process.exit(0), 200).unref()
} else {
  await main()
}

/** Runs the abuse `name` in a child process; resolves once it is under way, with its stop. */
async function attacker(name) {
  const child = fork(fileURLToPath(import.meta.url), ['--attacker', name], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  // --attacker-nice N: the attacker's process at that CPU priority (19: lowest), as an attacker
  // on another machine would take none of this one's two cores; 0 (the default) shares them.
  if (attackerNice !== 0) setPriority(child.pid, attackerNice)
  const next = () => new Promise((resolve) => child.once('message', resolve))
  child.send({ url: hub.url, founderSk: hexOf(founderSk), plainSk: hexOf(plainSk) })
  await next()
  return async () => {
    const answer = next()
    child.send({ stop: true })
    const { result } = await answer
    await new Promise((resolve) =>
      child.exitCode !== null ? resolve() : child.once('exit', resolve),
    )
    return result
  }
}

async function main() {
  const load = () => loadavg().map((x) => round(x, 1))
  const report = {
    bench: 'abuse',
    node: process.version,
    seconds_per_phase: seconds,
    warm_up_s: warmUp,
    hub_sync: values.sync,
    attackers: 'each abuse in its own child process',
    load_average_at_start: load(),
    phases: {},
  }
  const only = values.only?.split(',')
  let peak = rssMb()
  // A warm-up the report leaves out: the hub has just stored the history (its WAL checkpoints,
  // its code is not yet optimized), which made the first quiet phase the noisiest of a run. And
  // a second quiet phase at the end (see the header for what it does and does not show).
  progress('warm-up')
  if (warmUp > 0) await honest(warmUp * 1000)
  const quietPhase = (name) => name === 'quiet' || name === 'quiet-again'
  // The baselines run with any --only: each row is read against them.
  const baseline = (name) => quietPhase(name) || name === 'busy-machine'
  for (const name of [...Object.keys(abuses), 'quiet-again']) {
    if (only && !baseline(name) && !only.includes(name)) continue
    progress(name)
    const loadBefore = load()
    const stop = quietPhase(name) ? async () => ({}) : await attacker(name)
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb())), 100)
    const cpu0 = hubCpuMs()
    const t0 = performance.now()
    const member = await honest(seconds * 1000)
    const hubCpu = round((hubCpuMs() - cpu0) / ((performance.now() - t0) / 1000), 0)
    const loadAfter = load()
    const abuser = await stop()
    const rss = rssMb()
    // How long the hub stays busy with what the abuser left it.
    const after = await stallSeconds(60)
    clearInterval(sampler)
    report.phases[name] = {
      member,
      abuser,
      hub_rss_mb: rss,
      // Main-thread and worker CPU the hub spent per second of the phase: what the abuse costs
      // it, whatever else the machine is doing.
      hub_cpu_ms_per_s: hubCpu,
      member_answered_again_after_s: after,
      load_average: { before: loadBefore, after: loadAfter },
    }
    await sleep(500)
  }
  report.hub_peak_rss_mb = peak
  const stopped = await Promise.race([hub.stop().then(() => true), timeout(10_000)])
  if (!stopped) hub.child.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
  console.log(JSON.stringify(report, null, 2))
}
