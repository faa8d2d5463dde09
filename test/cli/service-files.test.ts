import { describe, expect, it } from 'vitest'
import { launchdPlist, systemdUnit } from '../../src/cli/service-files.js'

const spec = {
  node: '/usr/bin/node',
  kith: '/opt/kith app/bin/kith.js',
  home: '/home/a b/.kith',
  args: ['--no-web'],
}

describe('kith service files', () => {
  it('a systemd user unit runs kith up with this node, kith and KITH_HOME, restarted on failure', () => {
    const unit = systemdUnit(spec)
    expect(unit).toContain('ExecStart=/usr/bin/node "/opt/kith app/bin/kith.js" up --no-web\n')
    expect(unit).toContain('Environment="KITH_HOME=/home/a b/.kith"\n')
    expect(unit).toContain('Restart=on-failure\n')
    expect(unit).toContain('WantedBy=default.target\n')
  })

  it('a launchd agent: the same command as its arguments, kept alive on failure, XML escaped', () => {
    const plist = launchdPlist(
      { ...spec, home: '/Users/a&b/.kith' },
      '/Users/a/Library/Logs/kith.log',
    )
    expect(plist).toContain('<string>/opt/kith app/bin/kith.js</string>\n    <string>up</string>')
    expect(plist).toContain('<string>/Users/a&amp;b/.kith</string>')
    expect(plist).toMatch(/<key>SuccessfulExit<\/key>\s*<false\/>/)
  })
})
