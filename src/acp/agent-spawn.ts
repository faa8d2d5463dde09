import { spawn } from 'node:child_process'
import { createWriteStream, existsSync } from 'node:fs'
import { Readable, Transform, Writable } from 'node:stream'
import { KithError } from '../errors.js'
import { removePidFile, signalGroup, writePidFile } from './process-group.js'
import { killGraceMs } from './timings.js'
import type { AgentSpec, AgentTransport } from './agent-transport.js'

/** Environment variables an agent inherits; nothing else (no Kith secret is ever in env). */
export const envAllowlist = [
  'PATH',
  'HOME',
  'LANG',
  'LC_ALL',
  'TERM',
  'USER',
  'SHELL',
  'TMPDIR',
  'NODE_PATH',
]

/**
 * The transport of an agent that is a command: spawned in its own process group, ACP on its
 * stdin/stdout, its stderr (and any stdout line that is not JSON) in its log file. `heard` is
 * told of every stdout chunk, banners included (agents are silent while tools run).
 */
export async function spawnAgent(spec: AgentSpec, heard: () => void): Promise<AgentTransport> {
  const [command, ...args] = spec.argv
  if (command === undefined) throw new KithError('usage', 'an agent needs a command')
  const logFile = createWriteStream(spec.logPath, { flags: 'a', mode: 0o600 })
  // The log is open before the agent starts (a failure to open it is the caller's error);
  // a later write error (disk full, file removed) is kept, not fatal: the agent runs on.
  await new Promise<void>((resolve, reject) => {
    logFile.once('open', () => resolve())
    logFile.once('error', (err) =>
      reject(new KithError('io', `cannot open ${spec.logPath}: ${err.message}`)),
    )
  })
  let logError: string | undefined
  logFile.on('error', (err) => (logError = err.message))
  // spawn says ENOENT for a missing cwd as for a missing command: tell them apart.
  if (!existsSync(spec.cwd)) {
    const why = `its working directory ${spec.cwd} does not exist (kith agent add --cwd)`
    logFile.write(`[kith] ${new Date().toISOString()} cannot start ${command}: ${why}\n`)
    logFile.end()
    throw new KithError('error', `cannot start ${command}: ${why}`, {
      reason: 'cannot-start',
    })
  }
  const env: NodeJS.ProcessEnv = {}
  for (const name of [...envAllowlist, ...(spec.env ?? [])]) {
    if (process.env[name] !== undefined) env[name] = process.env[name]
  }
  // Its own process group (detached), so stopping it stops what it started.
  const child = spawn(command, args, {
    cwd: spec.cwd,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  })
  const pidPath = spec.pidPath
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      if (pidPath !== undefined) removePidFile(pidPath)
      // What it started (tools, MCP servers) goes with it, however it ended.
      if (child.pid !== undefined) {
        try {
          signalGroup(child.pid, 'SIGKILL')
        } catch (err) {
          if (logFile.writable)
            logFile.write(`[kith] could not stop its process group: ${String(err)}\n`)
        }
      }
      resolve(code)
    }),
  )
  if (pidPath !== undefined && child.pid !== undefined) writePidFile(pidPath, child.pid)
  const spawned = new Promise<void>((resolve, reject) => {
    child.once('spawn', () => resolve())
    child.once('error', (err: NodeJS.ErrnoException) => {
      // Said in its log too (kith agent logs NAME), where a person looks when it will not run.
      const why =
        err.code === 'ENOENT'
          ? `${command} was not found (is it installed, and on the PATH kith up runs with?)`
          : err.code === 'EACCES'
            ? `${command} is not executable`
            : err.message
      logFile.write(`[kith] ${new Date().toISOString()} cannot start ${command}: ${why}\n`)
      reject(new KithError('error', `cannot start ${command}: ${why}`, { reason: 'cannot-start' }))
    })
  })
  child.stderr.pipe(logFile, { end: false })
  // stdout is the protocol; a line that is not JSON (an adapter printing a banner or ANSI) is
  // logged and skipped instead of breaking the stream.
  let pending = ''
  const onlyJson = new Transform({
    transform: (chunk: Buffer, _enc, done) => {
      heard()
      pending += chunk.toString('utf8')
      let out = ''
      let i
      while ((i = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, i + 1)
        pending = pending.slice(i + 1)
        if (line.trimStart().startsWith('{')) out += line
        else if (line.trim() !== '') logFile.write(`[non-JSON stdout] ${line}`)
      }
      done(null, out)
    },
  })
  child.stdout.pipe(onlyJson)
  const running = () => child.exitCode === null && child.signalCode === null
  try {
    await spawned
  } catch (err) {
    logFile.end()
    throw err
  }
  return {
    output: Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
    input: Readable.toWeb(onlyJson) as ReadableStream<Uint8Array>,
    exited,
    get running() {
      return running()
    },
    get logError() {
      return logError
    },
    async stop() {
      if (running()) {
        const pid = child.pid
        const kill = (signal: NodeJS.Signals) => {
          if (pid === undefined || !signalGroup(pid, signal)) child.kill(signal)
        }
        kill('SIGTERM')
        const timer = setTimeout(() => kill('SIGKILL'), killGraceMs)
        await exited
        clearTimeout(timer)
      }
      logFile.end()
    },
  }
}
