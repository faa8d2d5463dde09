import {
  createServer as createHttpServer,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http'
import { existsSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo, Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { WebSocketServer, type ServerOptions, type WebSocket } from 'ws'
import { KithError } from '../errors.js'
import type { NostrEvent } from '../events/event.js'
import { damaged, damagedCodes } from '../store/db.js'
import { EventStore } from '../store/event-store.js'
import { BatchWriter } from '../store/batch-writer.js'
import { checkInBackground, unfinishedWalBytes, type BackgroundCheck } from '../store/integrity.js'
import { hubMigrations, usageUncountedKinds } from '../store/hub-schema.js'
import { Connection } from './connection.js'
import type { HubContext } from './context.js'
import { GroupCommit } from './group-commit.js'
import { defaultHubLimits, stopCloseWaitMs, wsCloseTimeoutMs, type HubLimits } from './limits.js'
import { relayInformation } from './nip11.js'
import { deliveredOnlyTo, firstRefusal, preventDelivery } from './refusals.js'
import { Admission } from './admission.js'
import { EventLimits } from './event-limits.js'
import { ReqScheduler, WorkBudget } from './req-scheduler.js'
import { SubscriptionIndex } from './subscriptions.js'
import { allowedRelayUrls, isLoopbackHost } from './urls.js'
import { VerifyPool } from '../verify/pool.js'
import { defaultLaneLimits, PairingLane } from './pairing-lane.js'
import { UpgradeGate } from './upgrade-gate.js'
import { kithVersion } from '../version.js'
import { verifyEventSignature } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import type { GrantVerifier } from '../grants/verifier.js'
import type { ChannelBook } from '../grants/channels.js'
import { FleetState } from '../grants/fleet-state.js'
import { TurnQueue } from './turn-queue.js'
import { Heartbeat } from './heartbeat.js'

export interface HubOptions {
  host?: string
  /** 0 picks a free port. */
  port?: number
  dbPath: string
  /** The fleet's founder (its owner key): the pinned root of every grant chain. */
  founder: string
  /** Extra URLs clients reach this hub by (tunnels, proxies), accepted in AUTH relay tags. */
  publicUrls?: string[]
  tls?: { cert: string | Buffer; key: string | Buffer }
  /** Allow a non-loopback bind without TLS (the network is already encrypted). */
  plain?: boolean
  limits?: Partial<HubLimits>
  /** Signature-verification worker threads; 0 verifies on the main thread. */
  verifyWorkers?: number
  /**
   * A verification pool to share (a node and its embedded hub need only one); the hub does not
   * close it. Without it the hub makes its own with `verifyWorkers`.
   */
  verifier?: VerifyPool
  synchronous?: 'full' | 'normal'
  /**
   * Commit on a writer thread of its own while the hub is busy (store/batch-writer.ts); default
   * true for a file on a machine of two cores or more, never for ':memory:'. Events in a batch
   * that start it: `writerWakeAt`.
   */
  storeWriter?: boolean
  writerWakeAt?: number
  now?: () => number
  log?: (line: string) => void
  /**
   * Answers plain HTTP requests that are not NIP-11 (the web app, `kith hub`); returns false to
   * leave a request to the hub. Gets the URLs the hub answers AUTH for.
   */
  http?: (req: IncomingMessage, res: ServerResponse, relayUrls: readonly string[]) => boolean
}

export interface Hub {
  /** The primary URL, e.g. ws://127.0.0.1:7447. */
  url: string
  port: number
  relayUrls: string[]
  store: EventStore
  grants: GrantVerifier
  channels: ChannelBook
  connections(): number
  /**
   * The background check of the store after a clean stop: settles with the damage it found
   * (the hub has closed itself by then) or undefined when the file is whole, or was checked
   * before serving.
   */
  checked: Promise<KithError | undefined>
  /** What the hub holds now, for tests and operators. */
  stats(): HubStats
  close(): Promise<void>
}

export interface HubStats {
  connections: number
  /** Sockets not (yet) authenticated as a member. */
  unauthenticated: number
  laneRooms: number
  /** Connections the pairing lane still refers to. */
  laneConnections: number
  /** Addresses with pairing rooms remembered. */
  laneAddresses: number
  /** Addresses the per-address connection rate remembers. */
  rateAddresses: number
  /** Signatures checked so far by the hub's verification pool. */
  verified: number
  /** Batches committed on the store's writer thread so far. */
  writerBatches: number
}

/** "2.2 s": how long a start-up step took, for the log. */
function secondsSince(t0: number): string {
  return `${((performance.now() - t0) / 1000).toFixed(1)} s`
}

/** For a promise whose outcome is told elsewhere: only its settling is awaited. */
function noteNothing(): void {}

/** Resets of a socket being upgraded or held: the socket closes by itself (see 'upgrade'). */
function ignoreSocketError(): void {}

/** Starts a hub: a NIP-01/11/42 relay over sqlite. Refuses unsafe binds before opening anything. */
export async function startHub(opts: HubOptions): Promise<Hub> {
  const host = opts.host ?? '127.0.0.1'
  if (!isLoopbackHost(host) && opts.tls === undefined && opts.plain !== true) {
    throw new KithError(
      'unsafe-bind',
      `refusing to serve plain ws:// on ${host}: anyone on that network could read the fleet's ` +
        'traffic. Give --tls-cert and --tls-key, or --plain if the network already encrypts ' +
        '(a tailnet, an SSH tunnel).',
    )
  }
  const limits: HubLimits = { ...defaultHubLimits, ...opts.limits }
  const log = opts.log ?? (() => undefined)
  const dbPath = opts.dbPath
  const inMemory = dbPath === ':memory:' || dbPath === ''
  // A file this start creates holds nothing to check.
  const created = !inMemory && !existsSync(dbPath)
  const onDisk = !inMemory && !created
  // sqlite's quick_check reads the whole file (~2.2 s at 1M events). After an unclean stop it runs
  // before serving: a crash or a power loss is when a disk that lies about its writes tears
  // pages, and a start after one is a recovery already. After a clean stop the file was whole
  // when this hub last closed it: it is checked on a worker while the hub serves (below).
  const walBytes = onDisk ? unfinishedWalBytes(dbPath) : 0
  const checkFirst = walBytes > 0
  const started = performance.now()
  if (checkFirst) {
    log(
      `integrity: ${dbPath} was not closed cleanly (its -wal holds ${walBytes} bytes): ` +
        'checking it (quick_check) before serving',
    )
  }
  const store = new EventStore(dbPath, {
    synchronous: opts.synchronous ?? 'full',
    syncApart: true,
    migrations: hubMigrations,
    usage: { exempt: usageUncountedKinds },
    check: checkFirst,
    onUpgrade: (from, to) =>
      log(`upgrading ${dbPath} from schema ${from} to ${to}: a large store takes a while`),
  })
  if (checkFirst) log(`integrity: ${dbPath} checked before serving: ok (${secondsSince(started)})`)
  if (created) log(`integrity: ${dbPath} is new: nothing to check`)
  // What is stored was admitted on its way in; the state it makes does not depend on order.
  const state = new FleetState({ founder: opts.founder, verifySignature: verifyEventSignature })
  try {
    state.replay({
      authority: [...store.eventsOfKind(Kind.Grant), ...store.eventsOfKind(Kind.Revocation)],
      definitions: store.allVersionsOfKind(Kind.ChannelDefinition),
      firsts: store.earliestInChannels(),
      legacy: store.legacyVersionIds(Kind.ChannelDefinition),
      settings: [
        ...store.allVersionsOfKind(Kind.FleetSetting),
        ...store.eventsOfKind(Kind.FleetSetting),
      ],
    })
  } catch (err) {
    store.close()
    // Unchecked yet (a clean stop), a damaged page the replay reads is refused the same way.
    const code = (err as { code?: unknown }).code
    if (typeof code === 'string' && damagedCodes.has(code)) {
      throw damaged(dbPath, (err as Error).message)
    }
    throw err
  }
  const { grants, channels } = state
  let verifier: VerifyPool
  try {
    verifier = opts.verifier ?? (await VerifyPool.create(opts.verifyWorkers, { helpInline: true }))
  } catch (err) {
    store.close()
    throw err
  }
  const ownVerifier = opts.verifier === undefined
  // A shared pool is its owner's to announce (the node logs it once for itself and its hub).
  if (ownVerifier) log(`verifier: ${verifier.description}`)
  const info = JSON.stringify(
    relayInformation({
      limits,
      version: kithVersion,
      owner: opts.founder,
    }),
  )
  const onHttp = (req: IncomingMessage, res: ServerResponse) => {
    const cors = {
      'access-control-allow-origin': '*',
      'access-control-allow-headers': '*',
      'access-control-allow-methods': 'GET',
    }
    if ((req.headers.accept ?? '').includes('application/nostr+json')) {
      res.writeHead(200, { 'content-type': 'application/nostr+json', ...cors })
      res.end(info)
      return
    }
    if (opts.http?.(req, res, [...relayUrls])) return
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', ...cors })
    res.end('This is a Kith hub. Connect over WebSocket with a Nostr client (NIP-01, NIP-42).\n')
  }
  const http = opts.tls ? createHttpsServer({ ...opts.tls }, onHttp) : createHttpServer(onHttp)
  // A peer that does not answer a close frame is cut quickly (wsCloseTimeoutMs, in limits.ts).
  // (ws ≥ 8.18 reads closeTimeout; its type definitions do not list it yet.) Upgrades pass the
  // gate first (upgrade-gate.ts), so ws only sees the ones let in.
  const wsOptions: ServerOptions & { closeTimeout: number } = {
    noServer: true,
    // The hub keeps its own set of connections (`conns`); ws's would add a Set entry and a
    // 'close' listener to every socket.
    clientTracking: false,
    maxPayload: limits.hardFrameBytes,
    closeTimeout: wsCloseTimeoutMs,
  }
  const wss = new WebSocketServer(wsOptions)
  const relayUrls = new Set<string>()
  const admission = new Admission(limits, log, {
    onAdmit: (socket) => gate.refund(socket),
    overRate: (address) => gate.overRate(address),
    answerNow: (socket) => gate.answerNow(socket),
  })
  const gate: UpgradeGate = new UpgradeGate({
    limits,
    relayUrls,
    isMember: (key, now) => grants.isMember(key, now).ok,
    verify: (event) => verifier.verify(event, JSON.stringify(event), 'stranger'),
    vouch: (socket) => admission.vouch(socket),
    settle: (socket) => admission.settle(socket),
    now: opts.now ?? (() => Math.floor(Date.now() / 1000)),
  })
  http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Node drops its own error listener from an upgraded socket, and the gate may wait on a
    // ticket's signature check: a reset meanwhile must not be an unhandled 'error'. A flood of
    // resets is a stranger's business, not the log's; the socket closes by itself. (A module
    // function, not an arrow here: an arrow would share this handler's scope and keep `req` and
    // `head` alive for the connection's life, 1.4 KB each.)
    socket.on('error', ignoreSocketError)
    gate.decide(req, socket).then(
      (verdict) => {
        if (typeof verdict === 'object') return
        wss.handleUpgrade(req, socket, head, (ws) => {
          // ws has its own 'error' listener on the socket now.
          socket.off('error', ignoreSocketError)
          wss.emit('connection', ws, req)
        })
      },
      (err: unknown) => {
        log(`upgrade: ${String(err)}`)
        socket.destroy()
      },
    )
  })
  // Every TCP connection is a stranger until it authenticates: counted, given a deadline.
  http.on(opts.tls ? 'secureConnection' : 'connection', (socket: Socket) => {
    admission.arrive(socket)
  })
  // ws re-emits the HTTP server's errors; listen errors are handled below, later ones logged.
  wss.on('error', (err) => log(`server: ${err.message}`))
  const subs = new SubscriptionIndex<Connection>()
  const conns = new Set<Connection>()
  // On one core a second thread would only take turns with the main one.
  const writer =
    opts.storeWriter === false || inMemory || availableParallelism() < 2
      ? undefined
      : new BatchWriter({ path: dbPath, synchronous: opts.synchronous ?? 'full', log })
  const commit = new GroupCommit(store, {
    maxBatch: 512,
    maxDelayMs: 4,
    moreComing: () => verifier.inFlight > 0,
    writer,
    wakeAt: opts.writerWakeAt,
  })
  const beforeBackground = () => commit.flushIfDue()
  const ctx: HubContext<Connection> = {
    store,
    commit,
    verifier,
    subs,
    limits,
    state,
    grants,
    channels,
    enforce: (cause) => {
      for (const conn of conns) conn.enforceMembership(cause)
    },
    eventLimits: new EventLimits(limits, grants, store),
    admission,
    reqs: new ReqScheduler<Connection>(limits.reqSliceMs, beforeBackground),
    reqWork: new WorkBudget(
      limits.reqWorkMsPerSecond,
      limits.reqWorkBurstMs,
      limits.reqWorkLendAfterQuietMs,
    ),
    perPerson: { connections: new Map(), negOpen: new Map() },
    negTurns: new TurnQueue(beforeBackground),
    relayUrls,
    now: opts.now ?? (() => Math.floor(Date.now() / 1000)),
    log,
    lane: new PairingLane<Connection>({
      ...defaultLaneLimits,
      maxRoomsPerAddress: limits.maxPairingRoomsPerAddress,
    }),
    fanOut: (raw: string, event: NostrEvent) => {
      // Who may receive it: refusals.ts preventDelivery (observer frames, private channels).
      const onlyTo = deliveredOnlyTo(event)
      const scoped = channels.hasPrivate
      subs.fanOut(event, (conn, subId) => {
        if (firstRefusal(preventDelivery, { event, onlyTo, scoped, to: conn }) !== undefined) return
        conn.deliver(subId, event.id, `["EVENT",${JSON.stringify(subId)},${raw}]`)
      })
    },
  }

  // Each WebSocket's listeners are these four functions, shared by every connection: they find
  // their Connection by the socket (`this`). Closures made per connection cost ~0.3 KB each one.
  const connOf = new WeakMap<WebSocket, Connection>()
  function onMessage(this: WebSocket, data: Buffer, isBinary: boolean): void {
    const conn = connOf.get(this)!
    if (isBinary) {
      conn.send(['NOTICE', 'invalid: binary frames are not NIP-01; send text'])
      return
    }
    conn.handle(data)
  }
  function onPong(this: WebSocket): void {
    connOf.get(this)!.alive = true
  }
  function onError(this: WebSocket, err: Error): void {
    log(`connection ${connOf.get(this)!.remote}: ${err.message}`)
  }
  function onClose(this: WebSocket): void {
    const conn = connOf.get(this)!
    conn.end()
    conns.delete(conn)
    subs.dropConnection(conn)
    ctx.lane.drop(conn)
  }

  wss.on('connection', (ws: WebSocket, req: IncomingMessage) => {
    const conn = new Connection(ws, ctx, req.socket)
    conns.add(conn)
    connOf.set(ws, conn)
    admission.attach(req.socket, (code, reason) => {
      conn.end()
      ws.close(code, reason)
    })
    ws.on('message', onMessage)
    ws.on('pong', onPong)
    ws.on('error', onError)
    ws.on('close', onClose)
  })

  const heartbeat = new Heartbeat(conns, limits.heartbeatMs, (conn) => {
    // Grants expire with time as well as by revocation.
    if (conn.enforceMembership()) return
    if (!conn.alive) {
      log(`reaping dead connection ${conn.remote}`)
      conn.ws.terminate()
      return
    }
    conn.alive = false
    conn.ws.ping()
  })
  heartbeat.start()

  try {
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject)
      http.listen(opts.port ?? 7447, host, () => {
        http.off('error', reject)
        // ws no longer owns the server (noServer): later server errors are logged here.
        http.on('error', (err) => log(`server: ${err.message}`))
        resolve()
      })
    })
  } catch (err) {
    heartbeat.stop()
    if (ownVerifier) await verifier.close()
    store.close()
    const code = (err as NodeJS.ErrnoException).code
    throw new KithError(
      'io',
      code === 'EADDRINUSE'
        ? `port ${opts.port} on ${host} is in use; pick another with --port (0 picks a free one)`
        : `cannot listen on ${host}:${opts.port}: ${String(err)}`,
      { cause: err },
    )
  }
  const port = (http.address() as AddressInfo).port
  let background: BackgroundCheck | undefined
  let checked: Promise<KithError | undefined> = Promise.resolve(undefined)
  if (onDisk && !checkFirst) {
    log(`integrity: ${dbPath} was closed cleanly: checking it (quick_check) in the background`)
    const began = performance.now()
    background = checkInBackground(dbPath)
    checked = background.done.then(
      async (damage) => {
        if (damage === undefined) {
          log(`integrity: ${dbPath} checked in the background: ok (${secondsSince(began)})`)
          return undefined
        }
        log(`integrity: ${damage.message} Stopping the hub.`)
        await close()
        return damage
      },
      (err: unknown) => {
        // Not a verdict on the file (no worker could start): say so, and serve.
        log(`integrity: ${err instanceof Error ? err.message : String(err)}; serving unchecked`)
        return undefined
      },
    )
  }
  const urls = allowedRelayUrls({ host, port, tls: opts.tls !== undefined, publicUrls: [] })
  for (const u of allowedRelayUrls({
    host,
    port,
    tls: opts.tls !== undefined,
    publicUrls: opts.publicUrls ?? [],
  })) {
    relayUrls.add(u)
  }

  let closing: Promise<void> | undefined
  const close = () =>
    (closing ??= (async () => {
      heartbeat.stop()
      const closed = [...conns].map(
        (conn) => new Promise<void>((resolve) => conn.ws.once('close', () => resolve())),
      )
      for (const conn of conns) conn.ws.close(1001, 'hub shutting down')
      // Events already accepted for commit are written before the store closes.
      ctx.commit.flush()
      // Give clients a moment to complete the close handshake (they see 1001, not 1006); then
      // whoever is left is cut off.
      await Promise.race([
        Promise.all(closed),
        new Promise((r) => setTimeout(r, stopCloseWaitMs).unref()),
      ])
      await new Promise<void>((resolve) => {
        wss.close(() => resolve())
        for (const conn of conns) conn.ws.terminate()
      })
      gate.answerAll()
      await new Promise<void>((resolve) => http.close(() => resolve()))
      if (ownVerifier) await verifier.close()
      // The writer thread's last batch is answered and its connection closed before the store's.
      await ctx.commit.close()
      await store.drained()
      // The check's connection closes first, so the store's is the last one: its close then
      // checkpoints and removes the -wal, and the next start knows this stop was clean. (Its
      // outcome, a failure included, is `checked`'s to tell; that one may be closing us.)
      await background?.done.then(noteNothing, noteNothing)
      store.close()
    })())

  return {
    url: urls[0]!,
    port,
    relayUrls: [...relayUrls],
    store,
    grants,
    channels,
    connections: () => conns.size,
    checked,
    stats: () => {
      const lane = ctx.lane.stats()
      return {
        connections: conns.size,
        unauthenticated: admission.size,
        laneRooms: lane.rooms,
        laneConnections: lane.connections,
        laneAddresses: lane.addresses,
        rateAddresses: gate.addresses,
        verified: verifier.verified,
        writerBatches: writer?.batches ?? 0,
      }
    },
    close,
  }
}
