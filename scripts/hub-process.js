// Starts `kith hub` as a real subprocess and resolves once it prints its listening line.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { createInterface } from 'node:readline'

export const kithBin = fileURLToPath(new URL('../bin/kith.js', import.meta.url))

/**
 * @param {string[]} args extra `kith hub` arguments
 * @param {{ env?: NodeJS.ProcessEnv }} [opts]
 * @returns {Promise<{ url: string, port: number, db: string, child: import('node:child_process').ChildProcess, stderr: () => string, stop: () => Promise<number | null> }>}
 */
export function spawnHub(args, opts = {}) {
  // Run the bin itself (not `node bin`) so its shebang's V8 flags apply, as for a user.
  // KITH_HUB_NODE_ARGS (e.g. "--max-semi-space-size=4 --cpu-prof") runs it under node with
  // those flags instead, for profiling.
  const nodeArgs = process.env.KITH_HUB_NODE_ARGS?.split(' ').filter(Boolean)
  const hubArgs = ['hub', '--port', '0', '--json', ...args]
  const child = spawn(
    nodeArgs ? process.execPath : kithBin,
    nodeArgs ? [...nodeArgs, kithBin, ...hubArgs] : hubArgs,
    {
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  let stderr = ''
  // A hub killed while its stdio is read resets its end of the socketpair: noted in its output,
  // not an uncaught ECONNRESET in whoever started it (a test run, a bench).
  for (const stream of [child.stdout, child.stderr]) {
    stream.on('error', (err) => (stderr += `[${err.message}]\n`))
  }
  child.stderr.on('data', (d) => {
    stderr += d
    // KITH_HUB_STDERR=1 shows the hub's own log lines while a bench or demo runs.
    if (process.env.KITH_HUB_STDERR) process.stderr.write(d)
  })
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)))
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout })
    child.on('exit', (code) =>
      reject(new Error(`hub exited (${code}) before listening: ${stderr}`)),
    )
    lines.on('line', (line) => {
      const msg = JSON.parse(line)
      if (msg.event !== 'listening') return
      resolve({
        url: msg.url,
        port: msg.port,
        db: msg.db,
        child,
        stderr: () => stderr,
        stop: async () => {
          if (child.exitCode === null) child.kill('SIGTERM')
          return exited
        },
      })
    })
  })
}
