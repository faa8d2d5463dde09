// What bench:hub and bench:scale share: the client both relays are measured with (one socket
// per connection, no permessage-deflate, AUTH answered when a relay asks), the ingest pump,
// REQ timing and the process's memory and CPU read from /proc.
import { readFileSync, readdirSync } from 'node:fs'
import WebSocket from 'ws'
import { signAuthEvent } from '../dist/events/nip42.js'

export const round = (x, d = 3) => Math.round(x * 10 ** d) / 10 ** d
export const pct = (sorted, p) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
export const summary = (samples) => {
  const s = [...samples].sort((a, b) => a - b)
  return { p50: round(pct(s, 50)), p95: round(pct(s, 95)), p99: round(pct(s, 99)) }
}

/**
 * A WebSocket as both relays are measured with. No permessage-deflate: `ws` offers it by default
 * and strfry accepts it, which made every strfry frame pay a zlib inflate on the client's thread
 * pool that no kith frame paid (the hub does not negotiate it): the "15× slower" of issue 34.
 */
export function openSocket(url) {
  return new WebSocket(url, { perMessageDeflate: false })
}

/**
 * Opens a connection and authenticates (NIP-42) as `sk` when the relay asks. A relay that does
 * not ask (strfry by default) is taken as ready after `quietMs` with no challenge.
 */
export function connect(url, sk, { quietMs = 250 } = {}) {
  return new Promise((resolve, reject) => {
    const ws = openSocket(url)
    ws.once('error', reject)
    let quiet
    ws.once('open', () => (quiet = setTimeout(() => resolve(ws), quietMs)))
    ws.on('message', function first(data) {
      const msg = JSON.parse(data.toString())
      if (msg[0] === 'AUTH') {
        clearTimeout(quiet)
        ws.send(JSON.stringify(['AUTH', signAuthEvent(url, msg[1], sk)]))
      } else if (msg[0] === 'OK') {
        ws.off('message', first)
        if (!msg[2]) reject(new Error(`AUTH refused: ${msg[3]}`))
        else resolve(ws)
      }
    })
  })
}

/** One EVENT, resolved on its OK true (rejected on OK false). */
export function publishOne(ws, event) {
  return new Promise((resolve, reject) => {
    const onMsg = (data) => {
      const msg = JSON.parse(data.toString())
      if (msg[0] !== 'OK' || msg[1] !== event.id) return
      ws.off('message', onMsg)
      if (msg[2]) resolve()
      else reject(new Error(`refused: ${msg[3]}`))
    }
    ws.on('message', onMsg)
    ws.send(JSON.stringify(['EVENT', event]))
  })
}

/**
 * Sends `events` over `conns`, `inflight` unanswered on each, until every one is answered.
 * Returns seconds, per-event OK latency (ms) and refusals. A duplicate counts as stored.
 */
export async function pump(conns, events, inflight) {
  const n = events.length
  // Serialized before the clock starts: the relay's time, not the client's JSON.stringify.
  const frames = events.map((e) => JSON.stringify(['EVENT', e]))
  const latencies = new Float64Array(n)
  const sentAt = new Map()
  let next = 0
  let acked = 0
  let refused = 0
  let firstRefusal = ''
  const t0 = performance.now()
  if (n > 0)
    await new Promise((resolve) => {
      const sendOne = (ws) => {
        if (next >= n) return
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
          if (!msg[2] && !/^duplicate:/.test(msg[3])) {
            refused++
            firstRefusal ||= msg[3]
          }
          if (++acked === n) resolve()
          else sendOne(ws)
        })
        for (let k = 0; k < inflight; k++) sendOne(ws)
      }
    })
  const seconds = (performance.now() - t0) / 1000
  for (const ws of conns) ws.removeAllListeners('message')
  return { seconds, latencies, refused, firstRefusal }
}

/** One REQ on `ws` timed from send to EOSE (or CLOSED): ms and how many events came. */
let subN = 0
export function timeReq(ws, filter) {
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

/** `q` REQs of each shape (name → (i) => filter), one at a time: p50/p95/p99 and results. */
export async function timeShapes(ws, shapes, q) {
  const out = {}
  for (const [name, make] of Object.entries(shapes)) {
    const samples = []
    let results = 0
    for (let i = 0; i < q; i++) {
      const r = await timeReq(ws, make(i))
      samples.push(r.ms)
      results = r.count
    }
    const s = summary(samples)
    out[name] = { p50_ms: s.p50, p95_ms: s.p95, p99_ms: s.p99, results_last: results }
  }
  return out
}

/**
 * Resident memory of a process at its peak and now, MB (Linux /proc). Now is also split into
 * anonymous pages (the process's own: heaps, caches) and file-backed ones (its binary and
 * libraries, and files it maps: for a kith hub mostly the `node` binary, for strfry its LMDB).
 */
export function memoryOf(pid) {
  if (pid === undefined) return {}
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const mb = (field) =>
      round(Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024, 1)
    return {
      peak_rss_mb: mb('VmHWM'),
      rss_mb: mb('VmRSS'),
      rss_anon_mb: mb('RssAnon'),
      rss_file_mb: mb('RssFile'),
    }
  } catch {
    // Not Linux, or the process is gone: memory is optional in the report.
    return {}
  }
}

/** CPU ticks per thread of a process (Linux /proc), to show where the time goes. */
export function threadCpu(pid) {
  const ticks = {}
  try {
    for (const t of readdirSync(`/proc/${pid}/task`)) {
      const f = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8').split(') ')[1].split(' ')
      ticks[t] = Number(f[11]) + Number(f[12])
    }
  } catch {
    // Not Linux: the breakdown is optional.
  }
  return ticks
}

/** CPU seconds each thread spent between two threadCpu readings, largest first. */
export function cpuSpent(before, after) {
  return Object.entries(after)
    .map(([t, v]) => round((v - (before[t] ?? 0)) / 100, 2))
    .filter((d) => d > 0.01)
    .sort((a, b) => b - a)
}
