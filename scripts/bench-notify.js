// npm run bench:notify [-- --cards N]
// Card raised → Web Push request sent. A real `kith hub` and a real `kith up` node (the person's
// push sender); a web device of the same person subscribed through it, its push service a local
// HTTPS stand-in that decrypts each push (RFC 8291) to learn which card it is. A member device
// raises N permission cards one after another (each waits for its push, so none is folded into a
// summary); per card: EVENT sent → push request received. Baseline in the same run: the same
// card reaching a plain client subscribed to the hub. Prints JSON.
import { spawn, execFileSync } from 'node:child_process'
import { createECDH, randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:https'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { createInterface } from 'node:readline'
import WebSocket from 'ws'
import ece from 'http_ece'
import { bytesToHex } from '@noble/hashes/utils.js'
import { generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import { signEvent } from '../dist/events/event.js'
import { signAuthEvent } from '../dist/events/nip42.js'
import { makePermissionRequest } from '../dist/events/permission-request.js'
import { makePushSubscription } from '../dist/events/push.js'
import { signGrant } from '../dist/grants/grant.js'
import { kithBin, spawnHub } from './hub-process.js'
import { scriptArgs } from './script-args.js'

const { values } = scriptArgs(import.meta.url, { cards: { type: 'string', default: '100' } })
const N = Number(values.cards)
const progress = (s) => process.stderr.write(`bench:notify ${s}\n`)
const round = (x) => Math.round(x * 1000) / 1000
const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const at = (p) => s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
  return {
    p50_ms: round(at(50)),
    p99_ms: round(at(99)),
    max_ms: round(s.at(-1)),
    samples: s.length,
  }
}
const now = () => Math.floor(Date.now() / 1000)
const tls = (f) => fileURLToPath(new URL(`../test/fixtures/tls/${f}`, import.meta.url))

// The push service stand-in: HTTPS with the test certificate, which the node trusts.
const ecdh = createECDH('prime256v1')
ecdh.generateKeys()
const auth = randomBytes(16)
const pushed = new Map()
const server = createServer(
  { key: readFileSync(tls('key.pem')), cert: readFileSync(tls('cert.pem')) },
  (req, res) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      const at = performance.now()
      res.writeHead(201).end()
      const payload = JSON.parse(
        ece
          .decrypt(Buffer.concat(chunks), {
            version: 'aes128gcm',
            privateKey: ecdh,
            authSecret: auth.toString('base64url'),
          })
          .toString(),
      )
      pushed.get(payload.tag)?.(at)
    })
  },
)
await new Promise((r) => server.listen(0, '127.0.0.1', r))
const endpoint = `https://127.0.0.1:${server.address().port}/push/bench`

const dir = mkdtempSync(join(tmpdir(), 'kith-bench-notify-'))
const ownerSk = generateSecretKey()
const owner = getPublicKey(ownerSk)
const home = join(dir, 'laptop')
const env = { ...process.env, KITH_HOME: home, NODE_EXTRA_CA_CERTS: tls('cert.pem') }
const hub = await spawnHub(['--db', join(dir, 'hub.db'), '--owner', owner, '--rate', '0'], {
  env: { KITH_HOME: join(dir, 'hubhome') },
})
execFileSync(kithBin, ['init', '--name', 'laptop', '--owner-key-stdin'], {
  env,
  input: bytesToHex(ownerSk),
})
execFileSync(kithBin, ['hub', 'add', hub.url], { env })
const laptop = JSON.parse(execFileSync(kithBin, ['whoami', '--json'], { env }).toString()).deviceHex
const node = spawn(kithBin, ['up', '--no-web', '--port', '0'], {
  env,
  stdio: ['ignore', 'pipe', 'inherit'],
})
const nodeLines = createInterface({ input: node.stdout })
const waitLine = (re) =>
  new Promise((resolve) => {
    const on = (l) => {
      if (!re.test(l)) return
      nodeLines.off('line', on)
      resolve(l)
    }
    nodeLines.on('line', on)
  })
await waitLine(/linked to/)

/** A client authenticated as `sk` after publishing `grants`. */
async function client(sk, grants) {
  const ws = new WebSocket(hub.url)
  const oks = new Map()
  const subs = new Map()
  let authed
  const ready = new Promise((r) => (authed = r))
  ws.on('message', (data) => {
    const m = JSON.parse(data.toString())
    if (m[0] === 'AUTH') {
      for (const g of grants) ws.send(JSON.stringify(['EVENT', g]))
      const a = signAuthEvent(hub.url, m[1], sk)
      oks.set(a.id, authed)
      ws.send(JSON.stringify(['AUTH', a]))
    } else if (m[0] === 'OK') {
      const f = oks.get(m[1])
      oks.delete(m[1])
      if (f !== undefined && m[2] !== true) throw new Error(`refused: ${m[3]}`)
      f?.()
    } else if (m[0] === 'EVENT') subs.get(m[1])?.(m[2])
  })
  await ready
  return {
    send: (e) => new Promise((r) => (oks.set(e.id, r), ws.send(JSON.stringify(['EVENT', e])))),
    sub: (id, filter, fn) => (subs.set(id, fn), ws.send(JSON.stringify(['REQ', id, filter]))),
    close: () => ws.close(),
  }
}

// The person's web device subscribes through the laptop node; a second device raises cards.
const grantDevice = (name) => {
  const sk = generateSecretKey()
  return {
    sk,
    grant: signGrant(
      { subject: getPublicKey(sk), role: 'device', fleet: owner, name },
      ownerSk,
      sk,
      now(),
    ),
  }
}
const web = grantDevice('phone')
const raiser = grantDevice('devbox')
const webClient = await client(web.sk, [web.grant])
const subscribed = waitLine(/phone receives cards by Web Push/)
await webClient.send(
  signEvent(
    makePushSubscription(
      {
        subscription: {
          endpoint,
          keys: {
            p256dh: ecdh.getPublicKey().toString('base64url'),
            auth: auth.toString('base64url'),
          },
        },
        classes: ['cards'],
        finishedAfter: 120,
      },
      web.sk,
      laptop,
      now(),
    ),
    web.sk,
  ),
)
await subscribed
const watcher = await client(ownerSk, [])
const seen = new Map()
watcher.sub('cards', { kinds: [4142], limit: 0 }, (e) => seen.get(e.id)?.(performance.now()))
const raise = await client(raiser.sk, [raiser.grant])

progress(`${N} cards`)
const toPush = []
const toSubscriber = []
for (let i = 0; i < N; i++) {
  const card = signEvent(
    makePermissionRequest(
      {
        channel: 'bench',
        fleet: owner,
        prompt: bytesToHex(randomBytes(32)),
        prompter: owner,
        title: `rm -rf build-${i}`,
        toolKind: 'execute',
        options: [
          { optionId: 'allow', name: 'Allow once', kind: 'allow_once' },
          { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
        ],
        expires: now() + 600,
        toolCallId: `t${i}`,
        sessionId: 's',
        input: 'ab'.repeat(32),
        nonce: bytesToHex(randomBytes(8)),
      },
      now(),
    ),
    raiser.sk,
  )
  const pushedAt = new Promise((r) => pushed.set(card.id, r))
  const seenAt = new Promise((r) => seen.set(card.id, r))
  const t = performance.now()
  await raise.send(card)
  toSubscriber.push((await seenAt) - t)
  toPush.push((await pushedAt) - t)
}

raise.close()
watcher.close()
webClient.close()
node.kill('SIGTERM')
await hub.stop()
server.closeAllConnections()
server.close()
rmSync(dir, { recursive: true, force: true })

const push = stats(toPush)
const sub = stats(toSubscriber)
console.log(
  JSON.stringify(
    {
      bench: 'notify',
      node: process.version,
      cores: availableParallelism(),
      cards: N,
      card_to_push: {
        ...push,
        what: 'card EVENT sent to the hub -> Web Push request received by the push service stand-in (through the node, encrypted per RFC 8291)',
      },
      card_to_subscriber: {
        ...sub,
        what: 'baseline, same run: the same card reaching a plain client subscribed to the hub',
      },
      notify_overhead_p50_ms: round(push.p50_ms - sub.p50_ms),
      target_p99_ms: 1000,
      met: push.p99_ms < 1000,
    },
    null,
    2,
  ),
)
process.exit(0)
