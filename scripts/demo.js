// npm run demo [-- --once]
// A fresh KITH_HOME, `kith init`, a hub on 127.0.0.1, and a round trip through it as a Nostr
// client would make it. Leaves the hub running until Ctrl-C (or exits after the round trip with
// --once), and removes the demo's KITH_HOME on the way out.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readFileSync } from 'node:fs'
import { finalizeEvent, generateSecretKey } from 'nostr-tools/pure'
import { hexToBytes } from '@noble/hashes/utils.js'
import { kithBin, spawnHub } from './hub-process.js'
import { connectAuthed } from './nostr-client.js'
const once = process.argv.includes('--once')
const home = mkdtempSync(join(tmpdir(), 'kith-demo-'))
const say = (s) => process.stdout.write(`${s}\n`)
const step = (s) => say(`\n▸ ${s}`)

step(`kith init  (KITH_HOME=${home})`)
process.stdout.write(
  execFileSync(kithBin, ['init', '--name', 'demo-laptop'], {
    env: { ...process.env, KITH_HOME: home },
  }),
)

step('kith hub  (embedded default: 127.0.0.1, sqlite in KITH_HOME)')
const hub = await spawnHub(['--port', process.env.KITH_DEMO_PORT ?? '0'], {
  env: { KITH_HOME: home },
})
say(`hub listening on ${hub.url}`)

let relay
const cleanup = async () => {
  relay?.close()
  await hub.stop()
  rmSync(home, { recursive: true, force: true })
}

try {
  step('a Nostr client connects, authenticates (NIP-42) as the owner and posts to #ops')
  // The demo reads the owner key only to play the owner's own client; it never prints it.
  const ownerSk = hexToBytes(readFileSync(join(home, 'owner.key'), 'utf8').trim())
  const t0 = performance.now()
  relay = await connectAuthed(hub.url, ownerSk)
  const event = finalizeEvent(
    {
      kind: 9,
      created_at: Math.floor(Date.now() / 1000),
      tags: [['h', 'ops']],
      content: 'hello from kith',
    },
    ownerSk,
  )
  await relay.publish(event)
  say(`OK true for ${event.id.slice(0, 16)}… (stored durably before the OK)`)
  const got = await new Promise((resolve) => {
    const sub = relay.subscribe([{ '#h': ['ops'] }], {
      onevent: (e) => resolve(e),
      oneose: () => sub.close(),
    })
  })
  say(
    `read back from #ops: "${got.content}" (connect, AUTH, publish, query: ${(performance.now() - t0).toFixed(1)} ms)`,
  )

  step('a stranger (not in the fleet) tries the same')
  await connectAuthed(hub.url, generateSecretKey()).then(
    (stranger) => {
      stranger.close()
      throw new Error('a stranger was admitted: the membership check is broken')
    },
    (err) => say(`refused: ${err instanceof Error ? err.message : String(err)}`),
  )
} catch (err) {
  await cleanup()
  throw err
}

if (once) {
  await cleanup()
  say('\ndone.')
} else {
  say(`\nThe hub keeps running at ${hub.url}. Ctrl-C stops it and removes the demo's KITH_HOME.`)
  process.on('SIGINT', () => {
    say('\nstopping…')
    cleanup().then(() => process.exit(0))
  })
}
