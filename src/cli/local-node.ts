import { KithError } from '../errors.js'
import { resolveKithHome } from '../identity/home.js'
import { loadIdentity, type Identity } from '../identity/keys.js'
import { openFleetNode, type FleetNode } from '../node/fleet.js'
import { GrantBook } from '../node/grant-book.js'
import { Names } from '../grants/names.js'
import { NodeStore } from '../store/node-store.js'
import { connectNode } from './control-client.js'

/**
 * The one way CLI commands open this machine's node state without the running node: node.db
 * (always closed after), and the fleet's grant book with a way to reach the running node's
 * embedded hub.
 */
export function withStore<T>(home: string, fn: (store: NodeStore) => T): T {
  const store = new NodeStore(home)
  try {
    return fn(store)
  } finally {
    store.close()
  }
}

/** This machine's node.db opened directly (no daemon), with names for display. */
export function withLocalNode<T>(
  fn: (local: { id: Identity; store: NodeStore; names: Names; book: GrantBook }) => T,
): T {
  const id = loadIdentity(resolveKithHome())
  const fleet = id.config.fleet
  if (fleet === undefined) throw new KithError('not-initialized', 'this machine is in no fleet yet')
  return withStore(id.home, (store) => {
    const book = new GrantBook(store.events, fleet)
    return fn({ id, store, book, names: new Names(book.verifier, store.reads, id.devicePubkey) })
  })
}

/** The hub embedded in the running `kith up`, if one runs and embeds one. */
async function embeddedHub(home: string): Promise<string | undefined> {
  const node = await connectNode(home)
  if (node === undefined) return undefined
  try {
    const status = await node.request('status')
    return status.embeddedHub ?? undefined
  } catch (err) {
    // An older node without status: nothing to sync with, as when none runs.
    if (!(err instanceof KithError)) throw err
    return undefined
  } finally {
    node.close()
  }
}

/** The fleet's grants for a command, syncing through the running node's hub when none is set. */
export function openLocalFleet(id: Identity = loadIdentity(resolveKithHome())): FleetNode {
  return { ...openFleetNode(id), embeddedHub: () => embeddedHub(id.home) }
}
