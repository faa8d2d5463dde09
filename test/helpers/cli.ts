import { spawn } from 'node:child_process'
import { onTestFinished } from 'vitest'
import { kithBin, spawnHub } from '../../scripts/hub-process.js'

export interface RunResult {
  code: number | null
  stdout: string
  stderr: string
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
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(opts.input ?? '')
  })
}

/** `kith hub` as a real subprocess on port 0, stopped after the test. */
export async function startHubProcess(args: string[], home: string) {
  const hub = await spawnHub(args, { env: { KITH_HOME: home } })
  onTestFinished(async () => {
    await hub.stop()
  })
  return hub
}
