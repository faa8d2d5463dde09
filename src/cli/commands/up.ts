import { readFileSync } from 'node:fs'
import { resolveKithHome } from '../../identity/home.js'
import { KithNode } from '../../node/kith-node.js'
import { parseCount, parsePort } from '../args.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { runUntilSignal, stoppedOrDamaged } from '../signals.js'
import { defaultAcpPort, startAcpServer, type AcpServerHandle } from '../acp-server.js'
import { npub } from '../key-text.js'
import { KithError } from '../../errors.js'
import { checkWebAddress, defaultWebPort, startWebServer, type WebServer } from '../../web/serve.js'

export const upCommand = declare({
  name: 'up',
  summary: "run this machine's node (links to hubs, or embeds one)",
  usage: [
    'kith up [--port PORT] [--web-port PORT | --no-web] [--page-size N] [--json]',
    'kith up --web-host HOST [--web-url URL]... (--web-tls-cert FILE --web-tls-key FILE | --web-plain)',
  ],
  arity: { min: 0, max: 0, error: 'kith up takes no arguments' },
  options: {
    port: {
      type: 'string',
      value: 'PORT',
      description: 'port of the embedded hub (default 7447; 0 picks a free one)',
    },
    'web-port': {
      type: 'string',
      value: 'PORT',
      description: `port of the web app on 127.0.0.1 (default ${defaultWebPort}; 0 picks a free one)`,
    },
    'no-web': { type: 'boolean', description: 'do not serve the web app' },
    'acp-port': {
      type: 'string',
      value: 'PORT',
      description: `port of the ACP remote transport on 127.0.0.1 (default ${defaultAcpPort}; 0 picks a free one)`,
    },
    'no-acp': { type: 'boolean', description: 'do not serve the ACP remote transport' },
    'web-host': {
      type: 'string',
      value: 'HOST',
      description:
        'serve the web app on this address too, for your phone (default 127.0.0.1 only). A non-loopback address needs --web-tls-cert/--web-tls-key, or --web-plain on a tailnet',
    },
    'web-url': {
      type: 'string',
      value: 'URL',
      multiple: true,
      description:
        'a URL your phone reaches the app by (a tailnet name, a proxy): its Host name is answered',
    },
    'web-tls-cert': {
      type: 'string',
      value: 'FILE',
      description: 'serve the web app over https with this certificate (PEM)',
    },
    'web-tls-key': { type: 'string', value: 'FILE', description: '...and this private key (PEM)' },
    'web-plain': {
      type: 'boolean',
      description:
        'allow plain http on a non-loopback --web-host (a network that already encrypts: a tailnet)',
    },
    'page-size': {
      type: 'string',
      value: 'N',
      description: 'events per catch-up page (default 2000)',
    },
    'permission-timeout': {
      type: 'string',
      value: 'S',
      description: "seconds an agent's permission request waits for a person (default 300)",
    },
    'cancel-grace': {
      type: 'string',
      value: 'S',
      description: 'seconds a cancelled agent may take to stop before it is killed (default 5)',
    },
    'idle-timeout': {
      type: 'string',
      value: 'S',
      description: "end an agent's turn after S seconds without output from it (default 900)",
    },
    'turn-cap': {
      type: 'string',
      value: 'S',
      description: 'end any agent turn after S seconds (default 7200)',
    },
    'presence-interval': {
      type: 'string',
      value: 'S',
      description:
        'say this device is up every S seconds (default 60); others take it as gone after 2.5 S of silence',
    },
    json: { type: 'boolean', description: 'log lines as JSON' },
  },
  about: `Runs this machine's node until Ctrl-C: links to every hub in the config (kith hub add URL), or,
with none configured, embeds a hub on 127.0.0.1:7447 so one machine works alone. It
authenticates as this device, sends everything in the outbox (kept in node.db until a hub
answers), catches up on what it missed since its last cursor, stays live, and reconnects by
itself. CLI commands (send, chat, log, status) talk to it through KITH_HOME/node.sock.
It also serves the web app on http://127.0.0.1:${defaultWebPort} (kith open): a browser paired as
a device of its own (kith pair --name phone), talking to this node's hubs; it is given no key
and no node state. A browser keeps its device key in the storage of the origin it loaded the app
from, so a phone should load it from a machine of yours: --web-host (with TLS, or --web-plain on
a tailnet) serves it there, and the pairing screen refuses a page served by someone else's
machine.`,
})

export async function runUp(argv: string[], out: Out): Promise<number> {
  const parsed = upCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values } = parsed
  if ((values['web-tls-cert'] === undefined) !== (values['web-tls-key'] === undefined)) {
    throw new KithError('usage', '--web-tls-cert and --web-tls-key go together')
  }
  const webTls =
    values['web-tls-cert'] !== undefined && values['web-tls-key'] !== undefined
      ? { cert: readPem(values['web-tls-cert']), key: readPem(values['web-tls-key']) }
      : undefined
  for (const u of values['web-url'] ?? []) {
    if (!/^https?:\/\/[^/]/.test(u))
      throw new KithError('usage', `--web-url takes an http:// or https:// URL, got ${u}`)
  }
  if (values['web-host'] !== undefined && values['no-web'] !== true) {
    checkWebAddress(values['web-host'], webTls !== undefined, values['web-plain'] === true)
  }
  const say = (event: string, fields: { message: string } & Record<string, unknown>) => {
    if (values.json) out.line(JSON.stringify({ event, ...fields }))
    else out.line(`kith up: ${fields.message}`)
  }
  const node = await KithNode.start({
    home: resolveKithHome(),
    embedPort: parsePort(values.port, 7447),
    ...(values['idle-timeout'] === undefined
      ? {}
      : { agentIdleTimeoutMs: 1000 * parseCount('--idle-timeout', values['idle-timeout'], 900) }),
    ...(values['turn-cap'] === undefined
      ? {}
      : { agentTurnCapMs: 1000 * parseCount('--turn-cap', values['turn-cap'], 7200) }),
    ...(values['cancel-grace'] === undefined
      ? {}
      : { cancelGraceMs: 1000 * parseCount('--cancel-grace', values['cancel-grace'], 5) }),
    ...(values['permission-timeout'] === undefined
      ? {}
      : {
          permissionTimeoutMs:
            1000 * parseCount('--permission-timeout', values['permission-timeout'], 300),
        }),
    ...(values['presence-interval'] === undefined
      ? {}
      : {
          presenceIntervalMs:
            1000 * Math.max(1, parseCount('--presence-interval', values['presence-interval'], 60)),
        }),
    ...(values['page-size'] === undefined
      ? {}
      : { pageSize: Math.max(1, parseCount('--page-size', values['page-size'], 2000)) }),
    log: (message) => say('log', { message }),
  })
  const hubs = node.links.map((l) => l.url)
  let acpServer: AcpServerHandle | undefined
  if (values['no-acp'] !== true) {
    try {
      acpServer = await startAcpServer({
        home: node.id.home,
        port: parsePort(values['acp-port'], defaultAcpPort),
        log: (message) => say('log', { message: `acp: ${message}` }),
      })
    } catch (err) {
      if (!(err instanceof KithError) || err.code !== 'io') {
        await node.stop()
        throw err
      }
      // The node is what matters; say why there is no ACP transport and go on.
      say('log', { message: `ACP transport not served: ${err.message}` })
    }
  }
  let web: WebServer | undefined
  if (values['no-web'] !== true) {
    try {
      web = await startWebServer({
        port: parsePort(values['web-port'], defaultWebPort),
        connectSources: () => node.links.map((l) => l.url),
        servedBy: () => {
          const { name, owner } = node.id.config
          return { role: 'node', name, ...(owner === undefined ? {} : { owner }) }
        },
        ...(values['web-host'] === undefined ? {} : { host: values['web-host'] }),
        ...(values['web-url'] === undefined ? {} : { urls: values['web-url'] }),
        ...(webTls === undefined ? {} : { tls: webTls }),
        plain: values['web-plain'] === true,
      })
      node.webUrl = web.url
    } catch (err) {
      if (!(err instanceof KithError) || (err.code !== 'io' && err.code !== 'not-found')) {
        // A usage error (--web-host without TLS) stops the node: the person asked for that.
        await node.stop()
        throw err
      }
      // The node is what matters; the app is an extra: say why it is not served and go on.
      say('log', { message: `web app not served: ${err.message}` })
    }
  }
  // Handlers first: the ready line can reach a supervisor that signals at once.
  const stopped = runUntilSignal(out, 'kith up', async () => {
    await web?.close()
    await acpServer?.close()
    await node.stop()
  })
  say('ready', {
    message: `${node.id.config.name} (${npub(node.id.devicePubkey)}) up; hubs: ${hubs.join(', ')}${web ? `; web app: ${web.url}` : ''}${acpServer ? `; ACP: ${acpServer.url}AGENT` : ''}`,
    device: npub(node.id.devicePubkey),
    hubs,
    embedded: node.embedded?.url ?? null,
    web: web?.url ?? null,
    acp: acpServer?.url ?? null,
  })
  // The embedded hub's check in the background (after a clean stop) may find hub.db damaged: the
  // hub then closes itself. The node stops too, with the error a check before serving would have
  // given (exit 1): a node whose only hub is gone serves nobody, and running on would hide the
  // damage in a log line while every send queued for a hub that is not coming back.
  const damage = await stoppedOrDamaged(stopped, node.embedded?.checked)
  if (damage !== undefined) {
    say('log', { message: "the embedded hub's database is damaged: stopping the node" })
    await web?.close()
    await acpServer?.close()
    await node.stop()
    throw damage
  }
  return 0
}

/** What the command index loads. */
export { upCommand as command, runUp as run }

function readPem(path: string): Buffer {
  try {
    return readFileSync(path)
  } catch (cause) {
    throw new KithError('io', `cannot read ${path}`, { cause })
  }
}
