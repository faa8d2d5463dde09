import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { bytesToHex } from '@noble/hashes/utils.js'
import { generateSecretKey } from 'nostr-tools/pure'
import { main } from '../../src/cli/main.js'
import { kithBin, spawnHub } from '../../scripts/hub-process.js'
import { onCleanup } from './cleanup.js'
import { beforeNodeStops, embeddedHubFiles, scanHub, storeFiles } from './sentinel.js'

export interface RunResult {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * A child killed mid-write resets its end of the stdio socketpair: the read then fails with
 * ECONNRESET, which with no listener is an uncaught exception that fails the whole run. The
 * test goes by what the child printed and its exit; the reset is noted in its output.
 */
export function notePipeErrors(child: ChildProcess, note: (line: string) => void): void {
  for (const [name, stream] of [
    ['stdin', child.stdin],
    ['stdout', child.stdout],
    ['stderr', child.stderr],
  ] as const) {
    stream?.on('error', (err: Error) => note(`[${name}: ${err.message}]\n`))
  }
}

/** Runs the real `kith` binary (built dist) with its own KITH_HOME. */
export function runKith(
  args: string[],
  opts: { home: string; input?: string; env?: NodeJS.ProcessEnv },
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(kithBin, args, {
      env: { ...process.env, ...opts.env, KITH_HOME: opts.home },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    notePipeErrors(child, (line) => (stderr += line))
    child.on('error', reject)
    // A command that never ends is a bug to report, not a test to hang on.
    // A stuck command is killed, but later than any wait of its own (kith session new waits 30 s
    // for its host): on a loaded machine a slow command must fail on what it says, not on this.
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
    child.stdin.end(opts.input ?? '')
  })
}

/**
 * Commands a test only sets things up with. `setupKith` runs them in this process, through the
 * same `main` the binary runs, which saves a process start (~0.5 s, several on a loaded machine)
 * each; everything else, and anything a test is about, goes through the real binary (runKith).
 */
const setupCommands = new Set(['init', 'hub add', 'agent add', 'project add', 'notify add'])

/** One in-process command at a time: KITH_HOME (and `env`) are process-wide while it runs. */
let inProcess: Promise<unknown> = Promise.resolve()

/** A setup command (`init`, `hub add`, `agent add`, `project add`, `notify add`) in-process. */
export function setupKith(
  args: string[],
  opts: { home: string; input?: string; env?: NodeJS.ProcessEnv },
): Promise<RunResult> {
  const name = args[0] === 'init' ? 'init' : args.slice(0, 2).join(' ')
  if (!setupCommands.has(name)) {
    throw new Error(`setupKith runs only ${[...setupCommands].join(', ')}; use runKith`)
  }
  const run = inProcess.then(async () => {
    let stdout = ''
    let stderr = ''
    const env = { ...opts.env, KITH_HOME: opts.home }
    const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]))
    Object.assign(process.env, env)
    try {
      const code = await main(args, {
        line: (text = '') => (stdout += `${text}\n`),
        json: (value) => (stdout += `${JSON.stringify(value, null, 2)}\n`),
        err: (text) => (stderr += `${text}\n`),
        secret: () => Promise.resolve((opts.input ?? '').trim()),
      })
      return { code, stdout, stderr }
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k]
        else process.env[k] = v
      }
    }
  })
  // The queue only orders runs; the caller gets its own failure from `run`.
  inProcess = run.then(
    () => undefined,
    () => undefined,
  )
  return run
}

/**
 * `kith hub` as a real subprocess on port 0, stopped after the test. Each time it stops, its
 * store's files are scanned for the sentinels of sealed fleets (sentinel.ts).
 */
export async function startHubProcess(args: string[], home: string, env: NodeJS.ProcessEnv = {}) {
  const hub = await spawnHub(args, { env: { ...env, KITH_HOME: home } })
  const stopOnly = hub.stop
  const stop = async () => {
    const code = await stopOnly()
    scanHub(hub.db, storeFiles(hub.db))
    return code
  }
  onCleanup(stop)
  return { ...hub, stop }
}

export interface NodeProcess {
  child: import('node:child_process').ChildProcess
  home: string
  lines: string[]
  /** Resolves with the first log line (past or future) matching. */
  waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<string>
  stop: (signal?: NodeJS.Signals) => Promise<number | null>
}

/**
 * `kith up --json` as a real subprocess; resolves once it reports ready. `env` adds to (or
 * overrides) the test's environment, e.g. a HOME of its own for the agents it spawns.
 */
export async function startNodeProcess(
  home: string,
  args: string[] = [],
  env: NodeJS.ProcessEnv = {},
): Promise<NodeProcess> {
  const child = spawn(kithBin, ['up', '--json', ...args], {
    env: { ...process.env, ...env, KITH_HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const lines: string[] = []
  const waiters: { pattern: RegExp; resolve: (l: string) => void }[] = []
  let buf = ''
  const onData = (d: Buffer) => {
    buf += d.toString()
    let i
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i)
      buf = buf.slice(i + 1)
      lines.push(line)
      for (const w of [...waiters]) {
        if (w.pattern.test(line)) {
          waiters.splice(waiters.indexOf(w), 1)
          w.resolve(line)
        }
      }
    }
  }
  child.stdout.on('data', onData)
  child.stderr.on('data', onData)
  notePipeErrors(child, (line) => onData(Buffer.from(line)))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const node: NodeProcess = {
    child,
    home,
    lines,
    waitFor: (pattern, timeoutMs = 20_000) => {
      const seen = lines.find((l) => pattern.test(l))
      if (seen !== undefined) return Promise.resolve(seen)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `no line matching ${String(pattern)} in ${timeoutMs} ms:\n${lines.join('\n')}`,
              ),
            ),
          timeoutMs,
        )
        waiters.push({
          pattern,
          resolve: (l) => {
            clearTimeout(timer)
            resolve(l)
          },
        })
      })
    },
    stop: async (signal = 'SIGTERM') => {
      // A graceful stop first sends the sentinel of a sealed fleet (sentinel.ts); a kill is a
      // test's crash, left as it is.
      const running = child.exitCode === null && child.signalCode === null
      try {
        if (running && ready && signal === 'SIGTERM') await beforeNodeStops(home)
      } finally {
        await stopNode(signal)
      }
      return exited
    },
  }
  let ready = false
  const stopNode = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    const code = await exited
    // kith up with no hub keeps an embedded one in its home: it is a hub of the fleet too.
    scanHub(`embedded hub of ${home}`, embeddedHubFiles(home))
    return code
  }
  onCleanup(async () => {
    try {
      if (ready && child.exitCode === null && child.signalCode === null) await beforeNodeStops(home)
    } finally {
      await stopNode('SIGKILL')
    }
  })
  await Promise.race([
    node.waitFor(/"event":"ready"/),
    exited.then((code) => {
      throw new Error(`kith up exited (${code}) before ready:\n${lines.join('\n')}`)
    }),
  ])
  ready = true
  return node
}

/** A free TCP port on 127.0.0.1 (for a hub that must come back on the same port). */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net')
  const s = createServer()
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  const port = (s.address() as { port: number }).port
  await new Promise<void>((resolve) => s.close(() => resolve()))
  return port
}

export interface Interactive {
  child: import('node:child_process').ChildProcess
  output: () => string
  /** Resolves with the first match of `pattern` in stdout+stderr (past or future). */
  waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<RegExpMatchArray>
  write: (text: string) => void
  exit: Promise<number | null>
}

/** A `kith` subprocess whose prompts a test answers on stdin, as a person would. */
export function spawnKith(args: string[], home: string, env: NodeJS.ProcessEnv = {}): Interactive {
  const child = spawn(kithBin, args, {
    env: { ...process.env, ...env, KITH_HOME: home },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let out = ''
  const waiters: { pattern: RegExp; resolve: (m: RegExpMatchArray) => void }[] = []
  const onData = (d: Buffer) => {
    out += d.toString()
    for (const w of [...waiters]) {
      const m = out.match(w.pattern)
      if (m) {
        waiters.splice(waiters.indexOf(w), 1)
        w.resolve(m)
      }
    }
  }
  child.stdout.on('data', onData)
  child.stderr.on('data', onData)
  // Typing into a program that has already ended (EPIPE) is what a person may do too: harmless.
  notePipeErrors(child, (line) => onData(Buffer.from(line)))
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  onCleanup(() => {
    if (child.exitCode === null) child.kill('SIGKILL')
  })
  return {
    child,
    output: () => out,
    exit,
    write: (text) => child.stdin.write(text),
    waitFor: (pattern, timeoutMs = 20_000) => {
      const m = out.match(pattern)
      if (m) return Promise.resolve(m)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no ${String(pattern)} in ${timeoutMs} ms:\n${out}`)),
          timeoutMs,
        )
        waiters.push({
          pattern,
          resolve: (x) => {
            clearTimeout(timer)
            resolve(x)
          },
        })
      })
    },
  }
}

/**
 * One person's laptop and devbox (the same owner key, each with its own KITH_HOME) on a real
 * `kith hub` process; nothing started on them yet.
 */
export async function laptopAndDevbox(
  dir: string,
  /** A fleet founded --plain (never sealed), for tests of what a plain Nostr client reads. */
  opts: { plain?: boolean } = {},
): Promise<{
  hub: Awaited<ReturnType<typeof startHubProcess>>
  laptop: string
  devbox: string
  /** The person's owner key (the founder's), for tests that sign as them. */
  ownerSk: Uint8Array
}> {
  const ownerSk = generateSecretKey()
  const owner = bytesToHex(ownerSk)
  const hubHome = join(dir, 'hubhome')
  await setupKith(['init', '--owner-key-stdin'], { home: hubHome, input: owner })
  const hub = await startHubProcess(['--db', join(dir, 'hub.db')], hubHome)
  const laptop = join(dir, 'laptop')
  const devbox = join(dir, 'devbox')
  for (const [home, name] of [
    [laptop, 'laptop'],
    [devbox, 'devbox'],
  ] as const) {
    const init = await setupKith(['init', '--name', name, '--owner-key-stdin'], {
      home,
      input: owner,
    })
    if (init.code !== 0) throw new Error(`kith init failed: ${init.stderr}`)
    // Each holds the owner key, so each says "off" itself: neither node then seals on catching up.
    if (opts.plain === true) {
      const off = await runKith(['fleet', 'encrypt', 'off'], { home })
      if (off.code !== 0) throw new Error(`kith fleet encrypt off failed: ${off.stderr}`)
    }
    const add = await setupKith(['hub', 'add', hub.url], { home })
    if (add.code !== 0) throw new Error(`kith hub add failed: ${add.stderr}`)
  }
  return { hub, laptop, devbox, ownerSk }
}
