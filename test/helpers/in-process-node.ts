import { expect } from 'vitest'
import { KithNode, type NodeOptions } from '../../src/node/kith-node.js'
import { onCleanup } from './cleanup.js'
import { beforeNodeStops, embeddedHubFiles, scanHub } from './sentinel.js'

/**
 * A `KithNode` in the test's own process, under the sentinel check (sentinel.ts) as a `kith up`
 * process started by startNodeProcess is: before it stops (the test's own `stop()`, or the
 * cleanup after the test), a node whose fleet seals sends a sentinel through its control
 * socket, as `kith send` would, and a node whose fleet does not seal must be in `plainFleets`;
 * once it stopped, the files of its embedded hub (its home's hub.db, when it has no hubs) are
 * scanned for every sentinel sent so far. A hub the test started itself (startTestHub) is
 * scanned by its own cleanup, which runs after this node's (cleanups run newest first).
 */
export async function startInProcessNode(opts: NodeOptions): Promise<KithNode> {
  const node = await KithNode.start(opts)
  const stop = node.stop.bind(node)
  let stopping: Promise<void> | undefined
  const checkedStop = async (): Promise<void> => {
    try {
      await beforeNodeStops(opts.home, () => hubLinked(node))
    } finally {
      await stop()
    }
    scanHub(`embedded hub of ${opts.home}`, embeddedHubFiles(opts.home))
  }
  // Once, whoever asks first: a test that stops its node mid-way, and the cleanup after it.
  node.stop = () => (stopping ??= checkedStop())
  // A test that stopped its node itself saw what its stop threw; the cleanup stops the rest.
  onCleanup(() => (stopping === undefined ? node.stop() : undefined))
  return node
}

/**
 * Waits, a while at most, for a link of `node` to be live: a test that only hands its node events
 * (intake) may stop it before its first link is up, and a sentinel sent then stays in the
 * outbox, reaching no hub to be looked for. A node whose hubs never take it (a lying hub) sends
 * it anyway: the scans' `held` count (KITH_SENTINEL_REPORT) shows what reached a hub.
 */
async function hubLinked(node: KithNode): Promise<void> {
  const live = () => node.status().hubs.some((h) => h.state === 'live')
  await expect
    .poll(live, { timeout: 10_000 })
    .toBe(true)
    .catch((err: unknown) => {
      // Not the test's failure: the check then covers less, and the report says so.
      process.stderr.write(`sentinel check: no live hub link (${String(err).split('\n')[0]})\n`)
    })
}
