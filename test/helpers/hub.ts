import { join } from 'node:path'
import { onTestFinished } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import {
  publicKeyOf,
  signEvent,
  type EventTemplate,
  type NostrEvent,
} from '../../src/events/event.js'
import { startHub, type Hub, type HubOptions } from '../../src/hub/server.js'
import type { VerifyPool } from '../../src/verify/pool.js'
import { RawClient } from './raw-client.js'
import { newSecret, signTestGrant } from './secrets.js'
import { dirFiles, scanHub } from './sentinel.js'
import { tempDir } from './tmp.js'

export interface TestHub {
  hub: Hub
  url: string
  dir: string
  ownerSk: Uint8Array
  owner: string
  /** A connected client already authenticated as the owner. */
  member: () => Promise<RawClient>
  /** A connected, unauthenticated client closed after the test. */
  connect: () => Promise<RawClient>
  sign: (t: Partial<EventTemplate>, sk?: Uint8Array) => NostrEvent
  /** The hub's log lines so far. */
  logs: string[]
  /** Resolves with the first log line (past or future) that matches. */
  logged: (match: RegExp, timeoutMs?: number) => Promise<string>
}

/** A real hub on 127.0.0.1, port 0, with a real sqlite file in a temp dir; closed after the test. */
export async function startTestHub(
  opts: Partial<HubOptions> & {
    /** One founder for several hubs of a fleet. */ ownerSk?: Uint8Array
  } = {},
): Promise<TestHub> {
  const dir = tempDir('kith-hub-')
  const ownerSk = opts.ownerSk ?? generateSecretKey()
  const owner = publicKeyOf(ownerSk)
  const hubOpts: Partial<HubOptions> & { ownerSk?: Uint8Array } = { ...opts }
  delete hubOpts.ownerSk
  const logs: string[] = []
  let waiters: { match: RegExp; resolve: (line: string) => void }[] = []
  const hub = await startHub({
    port: 0,
    dbPath: join(dir, 'hub.db'),
    founder: owner,
    verifyWorkers: 0,
    ...hubOpts,
    log: (line) => {
      logs.push(line)
      opts.log?.(line)
      waiters = waiters.filter((w) => {
        if (!w.match.test(line)) return true
        w.resolve(line)
        return false
      })
    },
  })
  const clients: RawClient[] = []
  onTestFinished(async () => {
    for (const c of clients) c.close()
    await hub.close()
    // Its files, as an operator has them, hold no sealed fleet's sentinel (sentinel.ts).
    scanHub(hub.url, dirFiles(dir))
  })
  return {
    hub,
    url: hub.url,
    dir,
    ownerSk,
    owner,
    connect: async () => {
      const c = await RawClient.connect(hub.url)
      clients.push(c)
      return c
    },
    member: async () => {
      const c = await RawClient.connect(hub.url)
      clients.push(c)
      const ok = await c.auth(hub.url, ownerSk)
      if (ok[2] !== true) throw new Error(`AUTH refused: ${String(ok[3])}`)
      return c
    },
    logs,
    logged: (match, timeoutMs = 15_000) => {
      const seen = logs.find((l) => match.test(l))
      if (seen !== undefined) return Promise.resolve(seen)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(`no log line matching ${match} in ${timeoutMs} ms: ${logs.join(' | ')}`),
            ),
          timeoutMs,
        )
        waiters.push({
          match,
          resolve: (line) => {
            clearTimeout(timer)
            resolve(line)
          },
        })
      })
    },
    sign: (t, sk = ownerSk) =>
      signEvent(
        {
          kind: t.kind ?? 9,
          created_at: t.created_at ?? Math.floor(Date.now() / 1000),
          tags: t.tags ?? [],
          content: t.content ?? 'hello',
        },
        sk,
      ),
  }
}

/** Connects a raw client to be closed after the test. */
export async function connectRaw(url: string): Promise<RawClient> {
  const c = await RawClient.connect(url)
  onTestFinished(() => c.close())
  return c
}

/**
 * A verification pool with real worker threads, closed after the test. The worker file only
 * exists compiled, so this is the built pool (npm test builds first).
 */
export async function workerPool(workers = 1): Promise<VerifyPool> {
  const distPool = '../../dist/verify/pool.js'
  const { VerifyPool: Built } = (await import(
    distPool
  )) as typeof import('../../src/verify/pool.js')
  // Worker threads run only with the wasm verifier (native verifies inline).
  const pool = await Built.create(workers, { verifier: { kind: 'wasm', reason: 'test' } })
  onTestFinished(() => pool.close())
  return pool
}

/**
 * A second person: a new key granted the owner role by the founder (published over a founder
 * connection, its OK awaited). Returns the key and a way to connect authenticated as them.
 */
export async function grantOwner(
  t: TestHub,
): Promise<{ sk: Uint8Array; client: () => Promise<RawClient> }> {
  const sk = newSecret()
  const founder = await t.member()
  const grant = signTestGrant(
    { subject: publicKeyOf(sk), role: 'owner', fleet: t.owner },
    t.ownerSk,
    Math.floor(Date.now() / 1000),
  )
  founder.send(['EVENT', grant])
  const ok = await founder.ok(grant.id)
  if (ok[2] !== true) throw new Error(`the owner grant was refused: ${String(ok[3])}`)
  return {
    sk,
    client: async () => {
      const c = await t.connect()
      const answer = await c.auth(t.url, sk)
      if (answer[2] !== true) throw new Error(`AUTH refused: ${String(answer[3])}`)
      return c
    },
  }
}
