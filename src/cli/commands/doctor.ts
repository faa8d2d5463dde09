import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { commandProblem } from '../../acp/command-check.js'
import { listAgentRecords } from '../../identity/agents.js'
import { readConfig } from '../../identity/config.js'
import { homeFiles, resolveKithHome } from '../../identity/home.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { connectNode } from '../control-client.js'

/** A hub that has not answered NIP-11 by then counts as unreachable. */
const hubTimeoutMs = 3_000
/** Clock skew beyond this fails: hubs refuse events too far from their own time. */
const maxSkewSeconds = 60

export const doctorCommand = declare({
  name: 'doctor',
  summary: 'check this machine: KITH_HOME, key file modes, node, hubs, agent commands, clock',
  usage: ['kith doctor [--json]'],
  arity: { min: 0, max: 0, error: 'kith doctor takes no arguments' },
  options: { json: { type: 'boolean', description: 'print the checks as JSON' } },
  about: `Checks, one line each (✓ or ✗): KITH_HOME exists and holds a config; each secret key file
(owner.key, device.key, agents/*.key) is mode 0600; whether the node runs (kith up: only
reported, not a failure); each configured hub (or, with none, the running node's embedded one)
answers its NIP-11 document within ${hubTimeoutMs / 1000} s, and how far this machine's clock is
from the hub's (its HTTP Date; more than ${maxSkewSeconds} s fails: grants and events carry
timestamps); each hosted agent's command is found (on PATH, or an executable file).
Exits 1 when any check fails.`,
})

interface Check {
  check: string
  ok: boolean
  detail: string
  /** Informational: shown, never fails the run (the node not running). */
  info?: boolean
}

function keyFileChecks(home: string): Check[] {
  const agentsDir = join(home, 'agents')
  const agentKeys = existsSync(agentsDir)
    ? readdirSync(agentsDir)
        .filter((f) => f.endsWith('.key'))
        .map((f) => join('agents', f))
    : []
  return [homeFiles.ownerKey, homeFiles.deviceKey, ...agentKeys]
    .filter((f) => existsSync(join(home, f)))
    .map((f) => {
      const mode = statSync(join(home, f)).mode & 0o777
      return {
        check: `key file ${f}`,
        ok: mode === 0o600,
        detail:
          mode === 0o600
            ? 'mode 0600'
            : `mode 0${mode.toString(8)}, should be 0600 (chmod 600 ${join(home, f)})`,
      }
    })
}

async function hubCheck(url: string): Promise<Check> {
  const sentAt = Date.now()
  try {
    const res = await fetch(url.replace(/^ws/, 'http'), {
      headers: { Accept: 'application/nostr+json' },
      signal: AbortSignal.timeout(hubTimeoutMs),
    })
    const roundTrip = Date.now() - sentAt
    const date = res.headers.get('date')
    if (!res.ok) return { check: `hub ${url}`, ok: false, detail: `answered HTTP ${res.status}` }
    if (date === null)
      return { check: `hub ${url}`, ok: true, detail: `reachable (${roundTrip} ms)` }
    // The Date header has 1 s resolution: a skew under 2 s is noise.
    const skew = Math.round((sentAt + roundTrip / 2 - Date.parse(date)) / 1000)
    const skewText =
      Math.abs(skew) < 2
        ? 'clock in step'
        : `clock ${Math.abs(skew)} s ${skew > 0 ? 'ahead of' : 'behind'} the hub`
    return {
      check: `hub ${url}`,
      ok: Math.abs(skew) <= maxSkewSeconds,
      detail: `reachable (${roundTrip} ms), ${skewText}`,
    }
  } catch (err) {
    const reason =
      err instanceof Error
        ? ((err.cause as Error | undefined)?.message ?? err.message)
        : String(err)
    return { check: `hub ${url}`, ok: false, detail: `unreachable: ${reason}` }
  }
}

async function runChecks(): Promise<Check[]> {
  const home = resolveKithHome()
  if (!existsSync(home)) {
    return [{ check: 'KITH_HOME', ok: false, detail: `${home} does not exist: run kith init` }]
  }
  const config = readConfig(home)
  const checks: Check[] = [
    {
      check: 'KITH_HOME',
      ok: config !== undefined,
      detail: config === undefined ? `${home} holds no config: run kith init` : home,
    },
    ...keyFileChecks(home),
  ]
  if (config === undefined) return checks
  const node = await connectNode()
  let embedded: string | null = null
  if (node !== undefined) {
    try {
      embedded = (await node.request('status')).embeddedHub
    } finally {
      node.close()
    }
  }
  checks.push({
    check: 'node',
    ok: true,
    info: true,
    detail: node === undefined ? 'not running (start it with kith up)' : 'running',
  })
  // With no hub configured, the running node's embedded hub is the one to check.
  const hubs = config.hubs.length > 0 ? config.hubs : embedded === null ? [] : [embedded]
  if (hubs.length === 0) {
    checks.push({
      check: 'hubs',
      ok: true,
      info: true,
      detail: 'none configured: kith up embeds one',
    })
  }
  checks.push(...(await Promise.all(hubs.map(hubCheck))))
  for (const agent of listAgentRecords(home)) {
    const command = agent.command?.[0]
    if (command === undefined) continue
    const problem = commandProblem(command, agent.cwd ?? process.cwd())
    checks.push({
      check: `agent ${agent.name}`,
      ok: problem === undefined,
      detail: problem ?? `${command} found`,
    })
  }
  return checks
}

export async function runDoctor(argv: string[], out: Out): Promise<number> {
  const parsed = doctorCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const checks = await runChecks()
  const ok = checks.every((c) => c.ok)
  if (parsed.values.json) out.json({ ok, checks })
  else {
    for (const c of checks) out.line(`${c.info ? '·' : c.ok ? '✓' : '✗'} ${c.check}: ${c.detail}`)
  }
  return ok ? 0 : 1
}

/** What the command index loads. */
export { doctorCommand as command, runDoctor as run }
