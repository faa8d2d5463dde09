import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { KithError } from '../../errors.js'
import { resolveKithHome } from '../../identity/home.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import {
  launchdLabel,
  launchdPlist,
  systemdUnit,
  systemdUnitName,
  type ServiceSpec,
} from '../service-files.js'

export const serviceCommand = declare({
  name: 'service',
  summary: 'run kith up as a service: started at login, restarted when it fails',
  usage: [
    'kith service install [--dry-run] [--json] [-- UP-FLAGS…]',
    'kith service status',
    'kith service logs [--follow]',
    'kith service uninstall [--dry-run]',
  ],
  subcommands: {
    install: 'write the service file and start it (systemd user unit, or launchd agent)',
    status: "the service manager's view of it",
    logs: 'its log (journalctl, or the launchd log file)',
    uninstall: 'stop it and remove the service file',
  },
  options: {
    'dry-run': { type: 'boolean', description: 'print what would be written and run; do nothing' },
    follow: { type: 'boolean', description: '(logs) keep printing new lines' },
    json: {
      type: 'boolean',
      description: '(install) print the file, its path and commands as JSON',
    },
  },
  about: `A devbox's node should survive a reboot without a tmux session. On Linux, install writes a
systemd user unit (~/.config/systemd/user/kith.service) running \`kith up\` with this KITH_HOME
and this node binary, restarted 5 s after a failure, then runs systemctl --user daemon-reload and
enable --now. For it to run while you are logged out: loginctl enable-linger $USER. On macOS it
writes a launchd agent (~/Library/LaunchAgents/${launchdLabel}.plist, logging to
~/Library/Logs/kith.log) and loads it. Flags after -- are passed to kith up (e.g. -- --no-web).
--dry-run prints the file and the commands instead. A kith chat attached to the node reattaches
when the service restarts it.`,
})

type Platform = 'systemd' | 'launchd'

function platform(): Platform {
  if (process.platform === 'darwin') return 'launchd'
  if (process.platform === 'linux') return 'systemd'
  throw new KithError(
    'usage',
    `kith service supports Linux (systemd) and macOS (launchd), not ${process.platform}`,
  )
}

function spec(args: readonly string[]): ServiceSpec {
  return {
    node: process.execPath,
    kith: fileURLToPath(new URL('../../../bin/kith.js', import.meta.url)),
    home: resolveKithHome(),
    args,
  }
}

interface Plan {
  path: string
  content: string
  install: string[][]
  uninstall: string[][]
  status: string[]
  logs: (follow: boolean) => string[]
}

function plan(p: Platform, args: readonly string[]): Plan {
  const s = spec(args)
  if (p === 'systemd') {
    const config = process.env.XDG_CONFIG_HOME ?? join(homedir(), '.config')
    return {
      path: join(config, 'systemd', 'user', systemdUnitName),
      content: systemdUnit(s),
      install: [
        ['systemctl', '--user', 'daemon-reload'],
        ['systemctl', '--user', 'enable', '--now', systemdUnitName],
      ],
      uninstall: [
        ['systemctl', '--user', 'disable', '--now', systemdUnitName],
        ['systemctl', '--user', 'daemon-reload'],
      ],
      status: ['systemctl', '--user', 'status', '--no-pager', systemdUnitName],
      logs: (follow) => [
        'journalctl',
        '--user',
        '-u',
        systemdUnitName,
        '-n',
        '200',
        '--no-pager',
        ...(follow ? ['-f'] : []),
      ],
    }
  }
  const log = join(homedir(), 'Library', 'Logs', 'kith.log')
  const path = join(homedir(), 'Library', 'LaunchAgents', `${launchdLabel}.plist`)
  return {
    path,
    content: launchdPlist(s, log),
    install: [['launchctl', 'load', '-w', path]],
    uninstall: [['launchctl', 'unload', '-w', path]],
    status: ['launchctl', 'list', launchdLabel],
    logs: (follow) => ['tail', '-n', '200', ...(follow ? ['-f'] : []), log],
  }
}

/** Runs a service manager's command in the foreground; its exit status, or why it could not. */
function run(cmd: string[], out: Out): number {
  const r = spawnSync(cmd[0]!, cmd.slice(1), { stdio: 'inherit' })
  if (r.error !== undefined) {
    out.err(
      `${cmd[0]} could not run: ${r.error.message} (is this a ${cmd[0] === 'launchctl' ? 'macOS' : 'systemd'} session?)`,
    )
    return 1
  }
  return r.status ?? 1
}

export function runService(argv: string[], out: Out): number {
  const parsed = serviceCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  const [sub, ...rest] = positionals
  if (sub !== 'install' && rest.length > 0)
    throw new KithError('usage', `kith service ${sub ?? ''} takes no arguments`)
  const dry = values['dry-run'] === true
  if (sub === 'install') {
    const p = plan(platform(), rest)
    if (values.json === true) {
      out.json({ path: p.path, content: p.content, commands: p.install, dryRun: dry })
      if (dry) return 0
    } else if (dry) {
      out.line(`would write ${p.path}:`)
      out.line(p.content.trimEnd())
      for (const c of p.install) out.line(`would run: ${c.join(' ')}`)
      return 0
    }
    mkdirSync(dirname(p.path), { recursive: true })
    writeFileSync(p.path, p.content, { mode: 0o644 })
    if (values.json !== true) out.line(`wrote ${p.path}`)
    for (const c of p.install) {
      const code = run(c, out)
      if (code !== 0) {
        out.err(
          `⚠ ${c.join(' ')} failed (exit ${code}); the file is in place: run it yourself, or kith service uninstall`,
        )
        return 1
      }
    }
    if (values.json !== true)
      out.line('kith up runs as a service now: kith service status, kith service logs')
    return 0
  }
  if (sub === 'uninstall') {
    const p = plan(platform(), [])
    if (dry) {
      for (const c of p.uninstall) out.line(`would run: ${c.join(' ')}`)
      out.line(`would remove ${p.path}`)
      return 0
    }
    if (!existsSync(p.path)) {
      out.err(`no service installed (${p.path} is not there)`)
      return 5
    }
    let code = 0
    for (const c of p.uninstall) code ||= run(c, out)
    rmSync(p.path)
    out.line(`removed ${p.path}`)
    return code
  }
  if (sub === 'status') return run(plan(platform(), []).status, out)
  if (sub === 'logs') return run(plan(platform(), []).logs(values.follow === true), out)
  throw new KithError(
    'usage',
    `kith service ${sub ?? ''}: not a subcommand\n\n${serviceCommand.help()}`,
  )
}

/** What the command index loads. */
export { serviceCommand as command, runService as run }
