import type { AddressInfo } from 'node:net'
import { generateSecretKey } from 'nostr-tools/pure'
import { onTestFinished } from 'vitest'
import WebSocket, { WebSocketServer } from 'ws'
import { signEvent, type NostrEvent } from '../../src/events/event.js'
import { Kind } from '../../src/events/kinds.js'

/** What the hostile hub does with one pairing event a party sends. */
export type LaneVerdict = 'forward' | { refuse: string } | 'drop'

/** One client connection through the proxy, as the pairing lane sees it. */
export interface LaneParty {
  /** 0 for the first party of a room (the inviter, who opens it with the code), 1 the next. */
  index: number
  pid: string
  subId: string
  /** Posts `content` into this party's lane subscription as if the other party had sent it. */
  inject: (content: unknown) => void
}

/**
 * A hub that lies: a WebSocket proxy in front of a real hub that forwards everything both ways
 * except the kind-24140 events a test chooses to refuse (answering `OK false` with its own
 * words, as a hub does), drop, or answer with messages of its own. AUTH works through it when
 * the real hub accepts the proxy's URL (`kith hub --url`).
 */
export async function startHostileHub(opts: {
  /** Decides each pairing event (its parsed content) from `party`; default: forward. */
  onPairing?: (party: LaneParty, content: Record<string, unknown>, event: NostrEvent) => LaneVerdict
  /** Called when a party's lane subscription is open. */
  onSubscribed?: (party: LaneParty) => void
}) {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise<void>((resolve) => server.once('listening', () => resolve()))
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`
  let upstreamUrl: string | undefined
  const rooms = new Map<string, number>()
  const sockets = new Set<WebSocket>()
  const injector = generateSecretKey()

  server.on('connection', (client) => {
    sockets.add(client)
    const upstream = new WebSocket(upstreamUrl!)
    sockets.add(upstream)
    const early: string[] = []
    let party: LaneParty | undefined
    upstream.on('open', () => {
      for (const f of early.splice(0)) upstream.send(f)
    })
    upstream.on('message', (data: Buffer) => {
      if (client.readyState === client.OPEN) client.send(data.toString('utf8'))
    })
    upstream.on('close', () => client.close())
    upstream.on('error', () => client.close())
    client.on('close', () => upstream.close())
    client.on('error', () => upstream.close())
    const forward = (frame: string) => {
      if (upstream.readyState === upstream.OPEN) upstream.send(frame)
      else early.push(frame)
    }
    client.on('message', (data: Buffer) => {
      const frame = data.toString('utf8')
      let msg: unknown[]
      try {
        msg = JSON.parse(frame) as unknown[]
      } catch {
        forward(frame)
        return
      }
      const [verb, a, b] = msg
      const filter = b as { kinds?: number[]; '#d'?: string[] } | undefined
      if (verb === 'REQ' && filter?.kinds?.[0] === Kind.Pairing && filter['#d']?.[0]) {
        const pid = filter['#d'][0]
        const index = rooms.get(pid) ?? 0
        rooms.set(pid, index + 1)
        const subId = String(a)
        party = {
          index,
          pid,
          subId,
          inject: (content) => {
            const event = signEvent(
              {
                kind: Kind.Pairing,
                created_at: Math.floor(Date.now() / 1000),
                tags: [['d', pid]],
                content: JSON.stringify(content),
              },
              injector,
            )
            client.send(JSON.stringify(['EVENT', subId, event]))
          },
        }
        forward(frame)
        const p = party
        // The lane answers EOSE at once; let that pass before the test acts.
        setTimeout(() => opts.onSubscribed?.(p), 50)
        return
      }
      if (verb === 'EVENT' && (a as NostrEvent | undefined)?.kind === Kind.Pairing && party) {
        const event = a as NostrEvent
        let content: Record<string, unknown> = {}
        try {
          content = JSON.parse(event.content) as Record<string, unknown>
        } catch {
          // Not JSON: judged as an empty message.
        }
        const verdict = opts.onPairing?.(party, content, event) ?? 'forward'
        if (verdict === 'drop') return
        if (verdict !== 'forward') {
          client.send(JSON.stringify(['OK', event.id, false, verdict.refuse]))
          return
        }
      }
      forward(frame)
    })
  })

  onTestFinished(async () => {
    for (const s of sockets) s.terminate()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return {
    url,
    /** Points the proxy at the real hub (started after it, with `--url` naming the proxy). */
    connectTo: (hubUrl: string) => {
      upstreamUrl = hubUrl
    },
  }
}
