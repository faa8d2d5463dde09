import { KithError } from '../../errors.js'
import { normalizeRelayUrl } from '../../events/nip42.js'
import { readConfig, writeConfig } from '../../identity/config.js'
import { resolveKithHome } from '../../identity/home.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { loadIdentity } from '../../identity/keys.js'
import { describeReports, syncHubs } from '../../node/fleet.js'
import { connectNode } from '../control-client.js'
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
127.0.0.1:7447, and only then: hub add of the running node's embedded hub is refused, since
adding it would turn it off (run kith hub on its own to keep a hub there).`,
})

/** ws://localhost:7447 and ws://127.0.0.1:7447/ are the same place. */
function samePlace(a: string, b: string): boolean {
  const norm = (u: string) => {
    const url = new URL(u)
    const host =
      url.hostname === 'localhost' || url.hostname === '[::1]' ? '127.0.0.1' : url.hostname
    return `${url.protocol}//${host}:${url.port}${url.pathname.replace(/\/$/, '')}`
  }
  return norm(a) === norm(b)
}

/** The running node's embedded hub, if it runs one. */
async function runningEmbeddedHub(): Promise<string | undefined> {
  const node = await connectNode()
  if (node === undefined) return undefined
  try {
    return (await node.request('status')).embeddedHub ?? undefined
  } finally {
    node.close()
  }
}

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
    const embedded = await runningEmbeddedHub()
    if (embedded !== undefined && samePlace(embedded, url))
      throw new KithError(
        'invalid',
        `${url} is the hub kith up embeds here, which runs only while no hub is configured: adding it would turn it off. To keep a hub there, run one on its own (kith hub --port ${new URL(url).port || '7447'}) and stop kith up's first; or add another machine's hub`,
      )
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
