// The fleet-shaped history bench:scale ingests, signed once and kept in a cache file, so that a
// run's ingest rate measures the relays and not this client's signing (one Node thread signs
// ~1,600 events/s while pumping; a million events into two relays took too long that way).
//
// Everything is derived from a seed: the keys (sha256 of the seed and a label, never written
// anywhere), the authors, channels, kinds, tags and contents. The cache holds only signed, public
// events: a header line, the fleet's grants, then the history, one JSON event a line. It is
// written to NAME.partial and renamed when whole, with NAME.done beside it recording its bytes
// and lines; a file whose .done is missing or disagrees, or a line that does not parse while it
// is read, is a corrupt cache: reported, removed, and made again by the next run.
import { createHash } from 'node:crypto'
import { once } from 'node:events'
import {
  closeSync,
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { availableParallelism, homedir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { Worker } from 'node:worker_threads'
import { getPublicKey } from 'nostr-tools/pure'
import { signGrant } from '../dist/grants/grant.js'

/** Bump when anything below changes what a seed generates: old cache files are then not used. */
export const HISTORY_VERSION = 1
/** One event every 30 s: a million is about a year of the fleet's history. */
export const SPACING = 30
const DAY = 86400
/**
 * strfry's shipped config refuses events older than 3 years (rejectEventsOlderThanSeconds); a
 * kith hub takes any past created_at (outboxes deliver late) and both refuse the future (kith:
 * 900 s, `maxFutureSeconds`). The history starts 400 days before midnight UTC of the day it is
 * made (earlier if it is longer than that: it always ends a day before), so a million events end
 * ~53 days before it was made; its grants are a day before its first event. A cache file stays
 * usable while those are inside strfry's window, with a day to spare. As the start does not
 * depend on the count, any longer file of the same seed holds a shorter history as its start.
 */
const OLDEST_ACCEPTED_S = 94_608_000 - DAY
const GENERATE_BATCH = 2_000

export const channels = ['general', 'ops', 'random', 'release', 'incidents', 'design'].concat(
  Array.from({ length: 6 }, (_, i) => `proj-${i}`),
)

export const defaultCacheDir = () =>
  process.env.KITH_BENCH_CACHE ?? join(homedir(), '.cache', 'kith-bench')

/** A secret key derived from the seed and a label: the same keys every run, stored nowhere. */
export function keyOf(seed, label) {
  return createHash('sha256').update(`kith-bench-scale:${seed}:${label}`).digest()
}

// A seeded generator: the same history every run.
function rng(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * The fleet: 20 people (p0 the founder, 19 owners granted by the founder), each with 2 devices
 * (delegating) and 1 agent under the first device: 60 authoring keys. Authors carry their label,
 * not their key; `keyOf(seed, label)` gives it back.
 */
export function fleetAuthors() {
  const authors = []
  for (let p = 0; p < 20; p++)
    for (let d = 0; d < 2; d++) {
      authors.push({ label: `p${p}d${d}`, agent: false })
      if (d === 0) authors.push({ label: `p${p}d${d}a0`, agent: true })
    }
  return authors
}

/** The grant chain of every authoring key, signed at `at` (before any event of the history). */
function fleetGrants(seed, at) {
  const sk = (label) => keyOf(seed, label)
  const pk = (label) => getPublicKey(sk(label))
  const founder = pk('p0')
  const grants = []
  for (let p = 0; p < 20; p++) {
    let personGrant
    if (p > 0) {
      const g = signGrant(
        { subject: pk(`p${p}`), role: 'owner', fleet: founder },
        sk('p0'),
        sk(`p${p}`),
        at,
      )
      grants.push(g)
      personGrant = g.id
    }
    for (let d = 0; d < 2; d++) {
      const device = `p${p}d${d}`
      const g = signGrant(
        {
          subject: pk(device),
          role: 'device',
          fleet: founder,
          deleg: true,
          ...(personGrant ? { parent: personGrant } : {}),
        },
        sk(`p${p}`),
        sk(device),
        at,
      )
      grants.push(g)
      if (d === 0)
        grants.push(
          signGrant(
            { subject: pk(`${device}a0`), role: 'agent', fleet: founder, parent: g.id },
            sk(device),
            sk(`${device}a0`),
            at,
          ),
        )
    }
  }
  return grants
}

/**
 * The unsigned events [from, to) of the history, with their ids, in order: half by agents (long
 * outputs, in the 6 project channels), half by people's devices (the first channels most); 72%
 * kind-9 messages (a third of them replies: e and p tags), 20% kind-7 reactions to one of the last
 * 200 messages (e, p, k and h tags), 8% agents' long tool reports (1.5–4 KB). `recent` carries the
 * last messages from one call to the next, so a reply's `e` tag needs its parent's id: ids are
 * computed here, in order; only the signatures are left to the workers.
 */
function templates(authors, pubkeys, base, from, to, recent) {
  const r = rng(from + 1)
  const people = authors.map((a, i) => i).filter((i) => !authors[i].agent)
  const agents = authors.map((a, i) => i).filter((i) => authors[i].agent)
  const out = []
  for (let i = from; i < to; i++) {
    const x = r()
    const agent = r() < 0.5
    const author = agent ? agents[(r() * agents.length) | 0] : people[(r() * people.length) | 0]
    const ch = agent ? channels[6 + ((r() * 6) | 0)] : channels[(r() * r() * 12) | 0]
    const parent = recent.length > 0 ? recent[(r() * recent.length) | 0] : undefined
    let ev
    if (x < 0.2 && parent) {
      ev = {
        kind: 7,
        tags: [
          ['e', parent.id],
          ['p', parent.pubkey],
          ['k', '9'],
          ['h', parent.ch],
        ],
        content: ['+', '👍', '🎉', '👀'][(r() * 4) | 0],
      }
    } else {
      const tags = [['h', ch]]
      if (parent && r() < 0.33) tags.push(['e', parent.id, '', 'reply'], ['p', parent.pubkey])
      const len = agent ? (x > 0.92 ? 1500 + r() * 2500 : 200 + r() * 800) : 10 + r() * 190
      ev = {
        kind: 9,
        tags,
        content: `m${i} ${'lorem ipsum '.repeat(Math.ceil(len / 12))}`.slice(0, len),
      }
    }
    const pubkey = pubkeys[author]
    const created_at = base + SPACING * i
    const id = createHash('sha256')
      .update(JSON.stringify([0, pubkey, created_at, ev.kind, ev.tags, ev.content]))
      .digest('hex')
    out.push({ a: author, e: { ...ev, created_at, pubkey, id } })
    if (ev.kind === 9) {
      recent.push({ id, pubkey, ch })
      if (recent.length > 200) recent.shift()
    }
  }
  return out
}

function paths(cacheDir, seed, count) {
  const file = join(cacheDir, `scale-history-v${HISTORY_VERSION}-seed${seed}-n${count}.jsonl`)
  return { file, done: `${file}.done`, partial: `${file}.partial` }
}

/** The cache's state: 'ok' with its header, or why it cannot be used. */
function check(p, seed, count) {
  if (!existsSync(p.file)) return { why: 'absent' }
  if (!existsSync(p.done)) return { why: 'corrupt: its .done record is missing' }
  let done
  let header
  try {
    done = JSON.parse(readFileSync(p.done, 'utf8'))
  } catch (err) {
    return { why: `corrupt: ${err.message}` }
  }
  const bytes = statSync(p.file).size
  if (bytes !== done.bytes) return { why: `corrupt: ${bytes} bytes, ${done.bytes} written` }
  try {
    header = JSON.parse(firstLine(p.file))
  } catch (err) {
    return { why: `corrupt header: ${err.message}` }
  }
  if (header.version !== HISTORY_VERSION || header.seed !== seed || header.count !== count)
    return { why: 'corrupt: its header is for another history' }
  const now = Math.floor(Date.now() / 1000)
  if (header.grant_time < now - OLDEST_ACCEPTED_S)
    return { why: 'stale: its oldest events are near strfry’s 3-year limit' }
  return { why: 'ok', header, lines: done.lines }
}

/** The header line alone (the file may be a gigabyte). */
function firstLine(file) {
  const buf = Buffer.alloc(64 * 1024)
  const fd = openSync(file, 'r')
  let n
  try {
    n = readSync(fd, buf, 0, buf.length, 0)
  } finally {
    closeSync(fd)
  }
  const nl = buf.subarray(0, n).indexOf(10)
  if (nl < 0) throw new Error('no header line')
  return buf.subarray(0, nl).toString('utf8')
}

/** Signs the history with one worker per core and writes the cache file. */
async function generate(p, seed, count, progress) {
  const authors = fleetAuthors()
  const pubkeys = authors.map((a) => getPublicKey(keyOf(seed, a.label)))
  const today = Math.floor(Date.now() / 1000 / DAY) * DAY
  const base = today - Math.max(400 * DAY, DAY + SPACING * count)
  const grantTime = base - DAY
  const grants = fleetGrants(seed, grantTime)
  const header = {
    kind: 'kith-bench-scale-history',
    version: HISTORY_VERSION,
    seed,
    count,
    base,
    spacing: SPACING,
    grant_time: grantTime,
    grants: grants.length,
    founder: pubkeys.length > 0 ? getPublicKey(keyOf(seed, 'p0')) : '',
    authors: authors.map((a, i) => ({ pubkey: pubkeys[i], agent: a.agent })),
  }
  mkdirSync(join(p.file, '..'), { recursive: true })
  rmSync(p.done, { force: true })
  rmSync(p.file, { force: true })
  const out = createWriteStream(p.partial)
  let bytes = 0
  let lines = 0
  const write = async (text) => {
    bytes += Buffer.byteLength(text)
    if (!out.write(text)) await once(out, 'drain')
  }
  await write(`${JSON.stringify(header)}\n`)
  for (const g of grants) await write(`${JSON.stringify(g)}\n`)
  lines = 1 + grants.length

  const n = Math.max(1, availableParallelism())
  const workers = Array.from(
    { length: n },
    () =>
      new Worker(new URL('./bench-scale-signer.js', import.meta.url), {
        workerData: { seed, labels: authors.map((a) => a.label) },
      }),
  )
  const waiting = workers.map(() => [])
  for (const [w, worker] of workers.entries()) {
    worker.on('message', (text) => waiting[w].shift().resolve(text))
    worker.on('error', (err) => {
      for (const q of waiting[w]) q.reject(err)
      waiting[w] = []
    })
  }
  const sign = (w, batch) =>
    new Promise((resolve, reject) => {
      waiting[w].push({ resolve, reject })
      workers[w].postMessage(batch)
    })

  const t0 = performance.now()
  const recent = []
  const inFlight = []
  let nextBatch = 0
  let signed = 0
  let shown = 0
  try {
    for (let from = 0; from < count; from += GENERATE_BATCH) {
      const to = Math.min(count, from + GENERATE_BATCH)
      inFlight.push(sign(nextBatch++ % n, templates(authors, pubkeys, base, from, to, recent)))
      // Two batches queued per worker keep them busy; more would only hold memory.
      if (inFlight.length >= 2 * n || to === count)
        while (inFlight.length > (to === count ? 0 : n)) {
          const text = await inFlight.shift()
          await write(text)
          signed += GENERATE_BATCH
          if (signed - shown >= 50_000 || signed >= count) {
            shown = signed
            const s = (performance.now() - t0) / 1000
            const done = Math.min(signed, count)
            progress(
              `history: ${done}/${count} signed on ${n} threads, ${Math.round(done / s)}/s, ` +
                `${Math.round(bytes / 1e6)} MB, ~${Math.round(((count - done) * s) / done)} s left`,
            )
          }
        }
    }
  } finally {
    for (const w of workers) await w.terminate()
  }
  lines += count
  out.end()
  await once(out, 'finish')
  renameSync(p.partial, p.file)
  writeFileSync(p.done, JSON.stringify({ bytes, lines }))
  progress(
    `history: ${count} events written to ${p.file} (${Math.round(bytes / 1e6)} MB) in ` +
      `${((performance.now() - t0) / 1000).toFixed(0)} s`,
  )
  return header
}

/**
 * The history of `count` events for `seed`, from the cache, made first if absent, stale or
 * corrupt. Returns the header (fleet, base time), the grants, and `slices(size)`: an async
 * iterator of arrays of at most `size` events, read from the file as they are needed (a million
 * events are ~0.8 GB of JSON: never all in memory).
 */
export async function openHistory({ seed, count, cacheDir, progress }) {
  // The smallest whole file of this seed with at least `count` events; else one is made.
  const name = new RegExp(`^scale-history-v${HISTORY_VERSION}-seed${seed}-n(\\d+)\\.jsonl$`)
  const sizes = (existsSync(cacheDir) ? readdirSync(cacheDir) : [])
    .map((f) => Number(name.exec(f)?.[1]))
    .filter((n) => n >= count)
    .sort((a, b) => a - b)
  let p
  let state
  for (const n of sizes) {
    p = paths(cacheDir, seed, n)
    state = check(p, seed, n)
    if (state.why === 'ok') break
    progress(`history cache ${p.file} is ${state.why}: removing it`)
    rmSync(p.done, { force: true })
    rmSync(p.file, { force: true })
  }
  if (state?.why !== 'ok') {
    p = paths(cacheDir, seed, count)
    progress(`history cache: none for seed ${seed} with ${count} events: making ${p.file}`)
    await generate(p, seed, count, progress)
    state = check(p, seed, count)
    if (state.why !== 'ok')
      throw new Error(`history cache ${p.file}: ${state.why} just after writing it`)
  } else
    progress(
      `history: the first ${count} events of ${p.file} (${Math.round(statSync(p.file).size / 1e6)} MB)`,
    )
  const { header } = state
  const lines = createInterface({ input: createReadStream(p.file), crlfDelay: Infinity })
  const it = lines[Symbol.asyncIterator]()
  let lineNo = 0
  const corrupt = (why) => {
    lines.close()
    rmSync(p.done, { force: true })
    rmSync(p.file, { force: true })
    return new Error(
      `history cache ${p.file} is corrupt at line ${lineNo} (${why}): removed it; run again to make it anew`,
    )
  }
  const nextEvent = async () => {
    const { value, done } = await it.next()
    lineNo++
    if (done) throw corrupt('it ends early')
    let e
    try {
      e = JSON.parse(value)
    } catch (err) {
      throw corrupt(err.message)
    }
    if (typeof e?.id !== 'string' || e.id.length !== 64 || typeof e.sig !== 'string')
      throw corrupt('not a signed event')
    return e
  }
  await it.next() // the header, checked above
  lineNo = 1
  const grants = []
  for (let i = 0; i < header.grants; i++) grants.push(await nextEvent())
  let read = 0
  return {
    header,
    grants,
    founderSk: keyOf(seed, 'p0'),
    async nextSlice(size) {
      const out = []
      while (out.length < size && read < count) {
        out.push(await nextEvent())
        read++
      }
      if (read === count) lines.close()
      return out
    },
    close: () => lines.close(),
  }
}
