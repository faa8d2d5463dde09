import { readFileSync, rmSync, writeFileSync } from 'node:fs'

/**
 * An agent runs as the leader of its own process group, so stopping it also stops the tools and
 * MCP servers it started. Its pid is kept in a file next to its log: a node that was killed
 * outright (SIGKILL, power loss) leaves agents running (codex-acp and claude-agent-acp do not
 * exit when their stdin closes), and the next `kith up` stops those leftovers before it starts
 * new ones.
 */

/** Signals the whole group; false when it is already gone. */
export function signalGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal)
    return true
  } catch (err) {
    // ESRCH: no such group (it has exited). Anything else is a real failure.
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false
    throw err
  }
}

export function writePidFile(path: string, pid: number): void {
  writeFileSync(path, `${pid}\n`, { mode: 0o600 })
}

export function removePidFile(path: string): void {
  rmSync(path, { force: true })
}

/**
 * Stops a group left by an earlier run of this agent, if its leader is still alive and still runs
 * the same program (a pid reused by an unrelated process is left alone). Returns its pid.
 */
export function reapLeftover(pidPath: string, program: string): number | undefined {
  let pid: number
  try {
    pid = Number(readFileSync(pidPath, 'utf8').trim())
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
  removePidFile(pidPath)
  if (!Number.isInteger(pid) || pid <= 1) return undefined
  let cmdline: string
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
  } catch (err) {
    // No such process (or no /proc on this system): nothing we can safely stop.
    if (['ENOENT', 'ESRCH'].includes((err as NodeJS.ErrnoException).code ?? '')) return undefined
    throw err
  }
  const base = program.split('/').pop() ?? program
  if (
    !cmdline
      .split('\0')
      .some((part) => part === program || part.endsWith(`/${base}`) || part === base)
  )
    return undefined
  return signalGroup(pid, 'SIGKILL') ? pid : undefined
}
