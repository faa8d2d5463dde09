import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { KithError } from '../../errors.js'
import { ensureKithHome, homeFiles, resolveKithHome } from '../../identity/home.js'
import { readConfig } from '../../identity/config.js'
import { defaultHubLimits } from '../../hub/limits.js'
import { startHub, type Hub } from '../../hub/server.js'
import { publicKeyOf } from '../../events/event.js'
import { PeerSync } from '../../link/peer-sync.js'
import { founderOf, hubGrantRequest, loadOrCreateHubKey } from './hub-peer.js'
import { hubWebHandler, loadWebFiles } from '../../web/serve.js'
import { parseCount, parsePort } from '../args.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { didYouMean } from '../../events/did-you-mean.js'
import { runUntilSignal, stoppedOrDamaged } from '../signals.js'
import { npub } from '../key-text.js'

export const hubServeCommand = declare({
  name: 'hub',
  summary: 'run a standalone hub (Nostr relay with NIP-42 auth)',
  usage: ['kith hub [options]'],
  words: ['add', 'list', 'rm', 'key', 'grant'],
  options: {
    host: {
      type: 'string',
      value: 'HOST',
      description:
        'address to bind (default 127.0.0.1). A non-loopback address needs --tls-cert/--tls-key, or --plain on an already-encrypted network',
    },
    port: { type: 'string', value: 'PORT', description: 'port (default 7447; 0 picks a free one)' },
    db: { type: 'string', value: 'PATH', description: 'sqlite file (default KITH_HOME/hub.db)' },
    owner: {
      type: 'string',
      value: 'NPUB',
      description:
        "the fleet's founder, root of every grant chain (default: the fleet of KITH_HOME)",
    },
    url: {
      type: 'string',
      value: 'URL',
      multiple: true,
      description:
        'a URL clients reach this hub by (tunnel, proxy). AUTH must name one of these or the bound address',
    },
    'tls-cert': {
      type: 'string',
      value: 'FILE',
      description: 'serve wss:// with this certificate (PEM)',
    },
    'tls-key': { type: 'string', value: 'FILE', description: '...and this private key (PEM)' },
    plain: { type: 'boolean', description: 'allow plain ws:// on a non-loopback address' },
    rate: {
      type: 'string',
      value: 'N',
      description:
        "events per second per person, all their keys together (default 100; 0 = no rate limit at all, the hub's included: for benchmarks)",
    },
    'hub-rate': {
      type: 'string',
      value: 'N',
      description: 'events per second for the whole hub, everyone together (default 2000)',
    },
    'quota-events': {
      type: 'string',
      value: 'N',
      description:
        'stored events per person (default 1000000); grants, revocations and channel definitions are not counted',
    },
    'quota-mb': {
      type: 'string',
      value: 'N',
      description: 'stored megabytes per person (default 512)',
    },
    workers: {
      type: 'string',
      value: 'N',
      description:
        'threads that check signatures beside the main thread under load (default: cores - 1)',
    },
    sync: {
      type: 'string',
      value: 'MODE',
      description:
        'full (default: OK after fsync, made off the main thread) or normal (OK survives a crash, not power loss)',
    },
    peer: {
      type: 'string',
      value: 'URL',
      multiple: true,
      description:
        "replicate with another hub or NIP-77 relay, both ways: a reconciliation on connect and each minute, live in between. Needs this hub's key granted by the founder: see kith hub key",
    },
    web: {
      type: 'boolean',
      description:
        "also serve the web app at this hub's origin (off by default: a browser's key is only as safe as the machine serving its app)",
    },
    'no-web': { type: 'boolean', description: 'do not serve the web app (the default)' },
    json: { type: 'boolean', description: 'print the listening line as JSON' },
  },
  about: `Runs a standalone hub: a Nostr relay (NIP-01, NIP-11, NIP-42) over sqlite that only fleet
members may read or write. Stops cleanly on Ctrl-C / SIGTERM. (The hubs this machine uses:
kith hub add|list|rm, see kith help hub add.)

With --web the hub also serves the web app (a paired browser or phone) at its own origin, for
the Host names of its URLs (https://HOST:PORT/ where wss://HOST:PORT is one of them, --url). A
browser keeps its device key in the storage of the origin it loaded the app from, so whoever runs
the machine that serves the app can use that key: serve it only from a hub you run for yourself.
The page says whose machine served it (the person of this KITH_HOME), and the app pairs only into
that person's fleet. Phones of other people load the app from their own kith up (--web-host).`,
})

export async function runHubServe(argv: string[], out: Out): Promise<number> {
  const parsed = hubServeCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  if (positionals.length > 0) {
    const near = didYouMean(positionals[0]!, ['add', 'list', 'rm', 'key', 'grant'], 1)[0]
    const hint = near === undefined ? '' : ` (did you mean kith hub ${near}?)`
    throw new KithError(
      'usage',
      `unknown hub command: ${positionals[0]}${hint}\n\n${hubServeCommand.help()}`,
    )
  }
  if ((values['tls-cert'] === undefined) !== (values['tls-key'] === undefined)) {
    throw new KithError('usage', '--tls-cert and --tls-key go together')
  }
  if (values.sync !== undefined && values.sync !== 'full' && values.sync !== 'normal') {
    throw new KithError('usage', `--sync is full or normal, got ${values.sync}`)
  }
  const home = resolveKithHome()
  const owner = founderOf(values.owner)
  const readPem = (path: string) => {
    try {
      return readFileSync(path)
    } catch (cause) {
      throw new KithError('io', `cannot read ${path}`, { cause })
    }
  }
  const tls =
    values['tls-cert'] !== undefined && values['tls-key'] !== undefined
      ? { cert: readPem(values['tls-cert']), key: readPem(values['tls-key']) }
      : undefined
  let dbPath = values.db
  if (dbPath === undefined) {
    ensureKithHome(home)
    dbPath = join(home, homeFiles.hubDb)
  }
  let web: ReturnType<typeof hubWebHandler> | undefined
  if (values.web === true && values['no-web'] === true) {
    throw new KithError('usage', '--web and --no-web: choose one')
  }
  if (values.web === true) {
    try {
      const config = readConfig(home)
      web = hubWebHandler(loadWebFiles(), {
        role: 'hub',
        ...(config === undefined ? {} : { name: config.name }),
        ...(config?.owner === undefined ? {} : { owner: config.owner }),
      })
    } catch (err) {
      if (!(err instanceof KithError) || err.code !== 'not-found') throw err
      // A hub is useful without the app: say why there is none and go on.
      out.err(`kith hub: ${err.message}; not serving the web app`)
    }
  }
  const hub = await startHub({
    host: values.host ?? '127.0.0.1',
    port: parsePort(values.port, 7447),
    dbPath,
    founder: owner,
    publicUrls: values.url ?? [],
    ...(tls ? { tls } : {}),
    plain: values.plain ?? false,
    limits: {
      eventsPerSecond: parseCount('--rate', values.rate, defaultHubLimits.eventsPerSecond),
      hubEventsPerSecond: parseCount(
        '--hub-rate',
        values['hub-rate'],
        defaultHubLimits.hubEventsPerSecond,
      ),
      quotaEvents: parseCount(
        '--quota-events',
        values['quota-events'],
        defaultHubLimits.quotaEvents,
      ),
      quotaBytes:
        1024 *
        1024 *
        parseCount('--quota-mb', values['quota-mb'], defaultHubLimits.quotaBytes / 1048576),
    },
    ...(values.workers === undefined
      ? {}
      : { verifyWorkers: parseCount('--workers', values.workers, 1) }),
    synchronous: values.sync ?? 'full',
    log: (line) => out.err(`kith hub: ${line}`),
    ...(web === undefined ? {} : { http: web }),
  })
  const files = openFilesLimit()
  if (files !== undefined && files < 2 * defaultHubLimits.maxUnauthenticated + 64) {
    out.err(
      `kith hub: the open-files limit is ${files}; strangers may hold ${defaultHubLimits.maxUnauthenticated} ` +
        'of them, which leaves members little. Raise it (ulimit -n 4096, or LimitNOFILE= under systemd).',
    )
  }
  const peers = startPeers(values.peer ?? [], hub, home, owner, out)
  // Handlers first: the ready line can reach a supervisor that signals at once.
  const stopped = runUntilSignal(out, 'kith hub', async () => {
    await Promise.all(peers.map((p) => p.close()))
    await hub.close()
  })
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({ event: 'listening', url: hub.url, port: hub.port, urls: hub.relayUrls, db: dbPath, owner: npub(owner) })}\n`,
    )
  } else {
    out.line(`kith hub listening on ${hub.url}`)
    out.line(`  fleet ${npub(owner)} (founder)`)
    out.line(`  db    ${dbPath}`)
    out.line(`  AUTH accepted for: ${hub.relayUrls.join(' ')}`)
    if (web !== undefined) out.line(`  web app at ${hub.url.replace(/^ws/, 'http')}/`)
    for (const p of peers) out.line(`  peer  ${p.stats().url}`)
  }
  // A damaged file found by the background check (after a clean stop) stops the hub as one found
  // before serving would have refused it: the same error, exit 1.
  const damage = await stoppedOrDamaged(stopped, hub.checked)
  if (damage !== undefined) {
    await Promise.all(peers.map((p) => p.close()))
    throw damage
  }
  return 0
}

/** One bridge per --peer, as this hub's key; says what the founder must do when it is not granted. */
function startPeers(urls: string[], hub: Hub, home: string, founder: string, out: Out): PeerSync[] {
  if (urls.length === 0) return []
  for (const url of urls) {
    if (!/^wss?:\/\//.test(url))
      throw new KithError('usage', `--peer takes a ws:// or wss:// URL, got ${url}`)
  }
  const secretKey = loadOrCreateHubKey(home)
  const key = publicKeyOf(secretKey)
  const d = hub.grants.isMember(key, Math.floor(Date.now() / 1000))
  if (!d.ok || d.role !== 'hub') {
    out.err(
      `kith hub: this hub's key is ${npub(key)}; it holds no hub grant for it yet. It fetches the ` +
        "grant from its peers once the founder has made it; if not yet, on the founder's machine " +
        `run:\n  kith hub grant ${hubGrantRequest(secretKey, founder)}`,
    )
  }
  return urls.map((peerUrl) => {
    const sync = new PeerSync({
      peerUrl,
      localUrl: hub.url,
      secretKey,
      store: hub.store,
      fleet: founder,
      log: (line) => out.err(`kith hub: ${line}`),
    })
    sync.start()
    return sync
  })
}

/** The process's soft limit on open files (Linux), or undefined where it cannot be read. */
function openFilesLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))
    return line === null ? undefined : Number(line[1])
  } catch {
    // Not Linux, or /proc is not mounted: the warning is a courtesy, skip it.
    return undefined
  }
}
