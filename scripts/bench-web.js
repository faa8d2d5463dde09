// npm run bench:web [-- --history N --runs R]
// The web app on localhost, in Debian's Chromium (playwright-core): the JavaScript of its first
// load (gzipped), and the time to a usable chat (navigation start → the channel shown, caught up
// and live: the app's `kith-chat-usable` mark), from Chromium's navigation timing.
// A real `kith up` (embedded hub, the app on --web-port 0) with N messages in #ops; the browser
// is paired through its UI as a person would. "cold": HTTP cache disabled and no service
// worker; "warm": a reload with the service worker and the cache. Prints JSON.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { gzipSync } from 'node:zlib'
import { createInterface } from 'node:readline'
import { chromium } from 'playwright-core'
import { ControlClient } from '../dist/cli/control-client.js'
import { kithBin } from './hub-process.js'
import { scriptArgs } from './script-args.js'

const { values } = scriptArgs(import.meta.url, {
  history: { type: 'string', default: '500' },
  runs: { type: 'string', default: '7' },
})
const HISTORY = Number(values.history)
const RUNS = Number(values.runs)
const progress = (s) => process.stderr.write(`bench:web ${s}\n`)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const round = (x) => Math.round(x * 10) / 10
const root = new URL('../dist/web/app/', import.meta.url).pathname
const dir = mkdtempSync(join(tmpdir(), 'kith-bench-web-'))
const home = join(dir, 'laptop')
const children = []

function run(args, input = '') {
  return new Promise((resolve, reject) => {
    const child = spawn(kithBin, args, { env: { ...process.env, KITH_HOME: home } })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(out))))
    child.stdin.end(input)
  })
}

/** A kith process whose output is watched line by line. */
function watch(args) {
  const child = spawn(kithBin, args, { env: { ...process.env, KITH_HOME: home } })
  children.push(child)
  let out = ''
  const waiters = []
  const on = (d) => {
    out += d
    for (const w of [...waiters]) {
      const m = out.match(w.re)
      if (m) {
        waiters.splice(waiters.indexOf(w), 1)
        w.resolve(m)
      }
    }
  }
  child.stdout.on('data', on)
  child.stderr.on('data', on)
  return {
    child,
    waitFor: (re) =>
      new Promise((resolve) => {
        const m = out.match(re)
        if (m) resolve(m)
        else waiters.push({ re, resolve })
      }),
  }
}

try {
  // The first load: every script the page itself names (lazy chunks such as the QR decoder are
  // loaded only when used).
  const html = readFileSync(join(root, 'index.html'), 'utf8')
  const first = [...html.matchAll(/(?:src|href)="\/(assets\/[\w.-]+\.(?:js|css))"/g)].map(
    (m) => m[1],
  )
  const size = (ext) =>
    first
      .filter((f) => f.endsWith(ext))
      .reduce((n, f) => n + gzipSync(readFileSync(join(root, f)), { level: 9 }).length, 0)
  const jsGzipBytes = size('.js')
  const cssGzipBytes = size('.css')

  await run(['init', '--name', 'laptop'])
  const up = watch(['up', '--json', '--port', '0', '--web-port', '0'])
  const ready = JSON.parse((await up.waitFor(/\{"event":"ready".*\}/))[0])
  progress(`node up, app on ${ready.web}; posting ${HISTORY} messages`)
  const control = await ControlClient.connect(join(home, 'node.sock'))
  for (let i = 0; i < HISTORY; i++)
    await control.request('send', {
      channel: 'ops',
      text: `message ${i}: the build is ${i % 3 === 0 ? 'green' : 'red'}, see \`npm test\``,
      waitMs: 0,
    })
  control.close()

  const browser = await chromium.launch({
    executablePath: process.env.KITH_CHROMIUM ?? '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  const page = await context.newPage()
  await page.goto(ready.web)
  const pair = watch(['pair', '--name', 'bench'])
  const code = (await pair.waitFor(/kith join (kith-pair1:[A-Za-z0-9_-]+)/))[1]
  await page.getByLabel('Pairing code').fill(code)
  await page.getByRole('button', { name: 'Continue' }).click()
  await page.getByRole('button', { name: 'Join' }).click()
  await page.getByRole('button', { name: 'Same digits' }).click()
  await pair.waitFor(/do not type it anywhere/)
  pair.child.stdin.write('y\n')
  await pair.waitFor(/paired: bench/)
  progress('paired')

  const cdp = await context.newCDPSession(page)
  const measure = async () => {
    // A new document each time (a hash change alone is not a navigation).
    await page.goto(`${ready.web}/?run=${Math.random().toString(36).slice(2)}#/c/ops`)
    await page.waitForFunction(
      () => performance.getEntriesByName('kith-chat-usable').length > 0,
      undefined,
      { timeout: 60_000 },
    )
    return page.evaluate(() => {
      const nav = performance.getEntriesByType('navigation')[0]
      const usable = performance.getEntriesByName('kith-chat-usable')[0].startTime
      return {
        responseEnd: nav.responseEnd,
        domContentLoaded: nav.domContentLoadedEventEnd,
        load: nav.loadEventEnd,
        usable,
        messages: document.querySelectorAll('article.message').length,
        dbg: performance
          .getEntriesByType('mark')
          .map((m) => `${m.name}:${Math.round(m.startTime)}`)
          .join(' '),
      }
    })
  }
  const series = async (cold) => {
    const samples = []
    for (let i = 0; i < RUNS; i++) {
      progress(`${cold ? 'cold' : 'warm'} run ${i + 1}`)
      if (cold) {
        await page.evaluate(async () => {
          for (const r of await navigator.serviceWorker.getRegistrations()) await r.unregister()
        })
        await cdp.send('Network.setCacheDisabled', { cacheDisabled: true })
      } else await cdp.send('Network.setCacheDisabled', { cacheDisabled: false })
      samples.push(await measure())
      progress(samples[samples.length - 1].dbg)
    }
    const pick = (k) => round(median(samples.map((s) => s[k])))
    return {
      responseEndMs: pick('responseEnd'),
      domContentLoadedMs: pick('domContentLoaded'),
      loadMs: pick('load'),
      usableChatMs: pick('usable'),
      usableChatMaxMs: round(Math.max(...samples.map((s) => s.usable))),
      messagesShown: samples[0].messages,
    }
  }
  if (process.env.KITH_PROFILE) {
    await cdp.send('Profiler.enable')
    await cdp.send('Profiler.setSamplingInterval', { interval: 200 })
    await cdp.send('Profiler.start')
    await measure()
    const { profile } = await cdp.send('Profiler.stop')
    const self = new Map()
    const byId = new Map(profile.nodes.map((n) => [n.id, n]))
    const dt = profile.timeDeltas
    profile.samples.forEach((id, i) => {
      const n = byId.get(id)
      const key = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').pop()}:${n.callFrame.lineNumber}`
      self.set(key, (self.get(key) ?? 0) + (dt[i] ?? 0) / 1000)
    })
    progress(JSON.stringify([...self].sort((a, b) => b[1] - a[1]).slice(0, 25), null, 1))
  }
  const cold = await series(true)
  // One load to install the worker again, then the warm series.
  await measure()
  await page.evaluate(async () => {
    await navigator.serviceWorker.ready
  })
  const warm = await series(false)
  await browser.close()
  console.log(
    JSON.stringify(
      {
        firstLoad: { files: first, jsGzipBytes, cssGzipBytes },
        history: HISTORY,
        runs: RUNS,
        cold,
        warm,
        chromium: browser.version(),
      },
      null,
      2,
    ),
  )
} finally {
  for (const c of children) c.kill('SIGTERM')
  await new Promise((r) => setTimeout(r, 500))
  rmSync(dir, { recursive: true, force: true })
}
