import { KithError } from '../../errors.js'
import { normalizeRelayUrl } from '../../events/nip42.js'
import { readConfig, writeConfig } from '../../identity/config.js'
import { resolveKithHome } from '../../identity/home.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { loadIdentity } from '../../identity/keys.js'
import { describeReports, syncHubs } from '../../node/fleet.js'
import { openLocalFleet } from '../local-node.js'

export const hubConfigCommand = declare({
  name: 'hub add|list|rm',
  summary: 'the hubs this machine uses: hub add URL, hub list, hub rm URL',
  usage: [
    'kith hub add URL        add a hub this machine connects to (ws://… or wss://…)',
    'kith hub list [--json]  list the configured hubs',
    'kith hub rm URL         remove a hub',
  ],
  options: { json: { type: 'boolean', description: '(list) print as JSON' } },
  about: `Hubs are kept in KITH_HOME/config.json. With none configured, kith up embeds a hub on
127.0.0.1:7447.`,
})

function loadConfig() {
  const home = resolveKithHome()
  const config = readConfig(home)
  if (config === undefined) {
    throw new KithError('not-initialized', `no kith identity in ${home}; run: kith init`)
  }
  return { home, config }
}

export async function runHubConfig(
  sub: 'add' | 'list' | 'rm',
  argv: string[],
  out: Out,
): Promise<number> {
  const parsed = hubConfigCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  const { home, config } = loadConfig()
  if (sub === 'list') {
    if (positionals.length > 0) throw new KithError('usage', `kith hub list takes no arguments`)
    if (values.json) out.json({ hubs: config.hubs })
    else if (config.hubs.length === 0) out.line('no hubs configured (kith up embeds one)')
    else for (const h of config.hubs) out.line(h)
    return 0
  }
  if (positionals.length !== 1) {
    throw new KithError(
      'usage',
      `kith hub ${sub} takes exactly one URL\n\n${hubConfigCommand.help()}`,
    )
  }
  const url = normalizeRelayUrl(positionals[0]!)
  if (sub === 'add') {
    if (config.hubs.includes(url)) {
      out.line(`${url} is already configured`)
      return 0
    }
    writeConfig(home, { ...config, hubs: [...config.hubs, url] })
    out.line(`added ${url}`)
    if (config.fleet === undefined) return 0
    // Publish this node's grants to the new hub right away so it admits this device.
    const node = openLocalFleet(loadIdentity(home))
    try {
      const reports = await syncHubs(node, Math.floor(Date.now() / 1000), undefined, [url])
      for (const l of describeReports(reports)) out.line(l)
    } finally {
      node.book.close()
    }
    return 0
  }
  if (!config.hubs.includes(url)) {
    throw new KithError('usage', `${url} is not configured; see kith hub list`)
  }
  writeConfig(home, { ...config, hubs: config.hubs.filter((h) => h !== url) })
  out.line(`removed ${url}`)
  return 0
}
