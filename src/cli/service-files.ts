/**
 * The files `kith service install` writes so `kith up` starts at login/boot and comes back when
 * it exits: a systemd user unit on Linux, a launchd agent on macOS. Pure: the caller says which
 * node, which kith, which KITH_HOME; the same text is printed by --dry-run.
 */

export interface ServiceSpec {
  /** The node binary (process.execPath): a login session's PATH may not have it. */
  node: string
  /** bin/kith.js of this installation. */
  kith: string
  home: string
  /** Extra `kith up` flags (e.g. --no-web). */
  args: readonly string[]
}

export const systemdUnitName = 'kith.service'
export const launchdLabel = 'dev.kith.up'

/** Quoted for systemd's ExecStart (double quotes, backslash and quote escaped). */
function systemdQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `"${word.replace(/[\\"]/g, '\\$&')}"`
}

/** A systemd user unit: restarted on failure, after the network, started with the user's session. */
export function systemdUnit(s: ServiceSpec): string {
  const exec = [s.node, s.kith, 'up', ...s.args].map(systemdQuote).join(' ')
  return `[Unit]
Description=Kith node (kith up)
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
Environment=${systemdQuote(`KITH_HOME=${s.home}`)}
ExecStart=${exec}
Restart=on-failure
RestartSec=5
# kith up stops within seconds of SIGTERM (its agents get their cancel grace).
TimeoutStopSec=30

[Install]
WantedBy=default.target
`
}

const xml = (t: string) =>
  t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

/** A launchd agent: run at load, kept alive when it exits with an error, logs in `log`. */
export function launchdPlist(s: ServiceSpec, log: string): string {
  const args = [s.node, s.kith, 'up', ...s.args]
    .map((a) => `    <string>${xml(a)}</string>`)
    .join('\n')
  return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>${launchdLabel}</string>
  <key>ProgramArguments</key>
  <array>
${args}
  </array>
  <key>EnvironmentVariables</key>
  <dict>
    <key>KITH_HOME</key>
    <string>${xml(s.home)}</string>
  </dict>
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <dict>
    <key>SuccessfulExit</key>
    <false/>
  </dict>
  <key>StandardOutPath</key>
  <string>${xml(log)}</string>
  <key>StandardErrorPath</key>
  <string>${xml(log)}</string>
</dict>
</plist>
`
}
