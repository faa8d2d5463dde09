// npm run idle:rss [-- --seconds S]
// Resident memory of an idle `kith up` (node + embedded hub): a fresh KITH_HOME, `kith init`,
// then `kith up --port 0` until it has linked to its embedded hub; after S seconds of idling
// (default 20) prints VmRSS, VmHWM and the thread count of the process as JSON.
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { parseArgs } from 'node:util'
import { kithBin } from './hub-process.js'
import { scriptArgs } from './script-args.js'

const { values } = scriptArgs(import.meta.url, { seconds: { type: 'string', default: '20' } })
const seconds = Number(values.seconds)
const home = mkdtempSync(join(tmpdir(), 'kith-idle-'))
const env = { ...process.env, KITH_HOME: home }
const init = spawnSync(kithBin, ['init', '--name', 'idle'], { env, encoding: 'utf8' })
if (init.status !== 0) throw new Error(`kith init failed: ${init.stderr}`)

const child = spawn(kithBin, ['up', '--port', '0', '--json'], {
  env,
  stdio: ['ignore', 'pipe', 'pipe'],
})
let stderr = ''
child.stderr.on('data', (d) => (stderr += d))
const linked = new Promise((resolve, reject) => {
  child.on('exit', (code) => reject(new Error(`kith up exited (${code}): ${stderr}`)))
  createInterface({ input: child.stdout }).on('line', (line) => {
    const msg = JSON.parse(line)
    if (msg.event === 'log' && String(msg.message).startsWith('linked to')) resolve()
  })
})
await linked
const mb = (status, field) =>
  Math.round((Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024) * 10) / 10
const sample = () => {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8')
  return {
    rss_mb: mb(status, 'VmRSS'),
    hwm_mb: mb(status, 'VmHWM'),
    threads: Number(/Threads:\s+(\d+)/.exec(status)?.[1] ?? 0),
  }
}
const atLink = sample()
await new Promise((r) => setTimeout(r, seconds * 1000))
const idle = sample()
child.kill('SIGTERM')
await new Promise((r) => child.once('exit', r))
rmSync(home, { recursive: true, force: true })
console.log(
  JSON.stringify(
    { bench: 'kith up idle', node: process.version, at_link: atLink, idle, idle_seconds: seconds },
    null,
    2,
  ),
)
