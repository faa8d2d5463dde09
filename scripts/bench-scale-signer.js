// A worker of bench-scale-history.js: signs batches of the history's events. The main thread
// made each event and its id (a reply's tags need its parent's id, so ids are made in order);
// signing, the costly part, runs here, one worker per core. Keys are derived from the seed here,
// not passed around. Passing `ent` makes nostr-wasm skip its random aux (it keeps a fixed buffer;
// BIP340's nonce still comes from the key and message), so a seed gives the same events byte for
// byte (the grants differ: signGrant draws fresh randomness).
import { parentPort, workerData } from 'node:worker_threads'
import { initNostrWasm } from 'nostr-wasm'
import { keyOf } from './bench-scale-history.js'

const nostr = await initNostrWasm()
const keys = workerData.labels.map((label) => keyOf(workerData.seed, label))

parentPort.on('message', (batch) => {
  let text = ''
  for (const { a, e } of batch) {
    const id = e.id
    const ev = { kind: e.kind, created_at: e.created_at, tags: e.tags, content: e.content }
    nostr.finalizeEvent(ev, keys[a], Buffer.from(id, 'hex'))
    // The main thread's id must be the event's own: a serialization mismatch would send replies
    // to parents that do not exist.
    if (ev.id !== id || ev.pubkey !== e.pubkey)
      throw new Error(`signer: event ${e.created_at} got id ${ev.id}, expected ${id}`)
    text += `${JSON.stringify({ id: ev.id, pubkey: ev.pubkey, created_at: ev.created_at, kind: ev.kind, tags: ev.tags, content: ev.content, sig: ev.sig })}\n`
  }
  parentPort.postMessage(text)
})
