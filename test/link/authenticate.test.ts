import { describe, expect, it, onTestFinished } from 'vitest'
import WebSocket, { WebSocketServer } from 'ws'
import { generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import { signEvent, tagValue, type NostrEvent } from '../../src/events/event.js'
import { authenticate } from '../../src/link/authenticate.js'
import { RelayClient, relayVerdict, saysRevoked } from '../../src/link/relay-client.js'

// The link handshake written once (issue 32): the node's links, peer links, one-off hub calls,
// the web app and the service worker all act on authenticate()'s coded result.

/** A real WebSocket server on 127.0.0.1:0 that sends `challenge` on connect and answers AUTH. */
async function hub(opts: { challenge?: string; authAnswer: string; refuse?: Set<string> }) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 })
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()))
  const published: NostrEvent[] = []
  const auths: NostrEvent[] = []
  wss.on('connection', (socket) => {
    if (opts.challenge !== undefined) socket.send(JSON.stringify(['AUTH', opts.challenge]))
    socket.on('message', (data: Buffer) => {
      const [verb, e] = JSON.parse(data.toString()) as [string, NostrEvent]
      if (verb === 'EVENT') {
        published.push(e)
        const refused = opts.refuse?.has(e.id) === true
        socket.send(JSON.stringify(['OK', e.id, !refused, refused ? 'blocked: not now' : '']))
      } else if (verb === 'AUTH') {
        auths.push(e)
        const ok = opts.authAnswer === ''
        socket.send(JSON.stringify(['OK', e.id, ok, opts.authAnswer]))
      }
    })
  })
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        for (const s of wss.clients) s.terminate()
        wss.close(() => resolve())
      }),
  )
  const { port } = wss.address() as { port: number }
  const url = `ws://127.0.0.1:${port}`
  const client = await RelayClient.connect(new WebSocket(url), { url, timeoutMs: 5000 })
  onTestFinished(() => client.close())
  return { client, url, published, auths }
}

const secret = generateSecretKey()
const grant = (content: string) =>
  signEvent({ kind: 4140, created_at: 1, tags: [], content }, generateSecretKey())

describe('authenticate: challenge, chain, AUTH, a coded result', () => {
  it('publishes the chain in order before AUTH, reports refusals, and signs AUTH for the URL', async () => {
    const chain = [grant('founder'), grant('device')]
    const h = await hub({ challenge: 'c1', authAnswer: '', refuse: new Set([chain[1]!.id]) })
    const refused: string[] = []
    const result = await authenticate(h.client, {
      secret,
      chain,
      onChainRefused: (e, r) => refused.push(`${e.content}: ${r.message}`),
    })
    expect(result).toEqual({ code: 'ok', message: '' })
    expect(h.published.map((e) => e.content)).toEqual(['founder', 'device'])
    expect(refused).toEqual(['device: blocked: not now'])
    expect(h.auths).toHaveLength(1)
    expect(h.auths[0]!.pubkey).toBe(getPublicKey(secret))
    expect(tagValue(h.auths[0]!, 'challenge')).toBe('c1')
    expect(tagValue(h.auths[0]!, 'relay')).toBe(h.url)
  })

  it('a revoked key is told apart from any other refusal, and no challenge is its own code', async () => {
    const revoked = await hub({ challenge: 'c', authAnswer: 'restricted: revoked: by the founder' })
    expect(await authenticate(revoked.client, { secret })).toEqual({
      code: 'revoked',
      reason: 'revoked: by the founder',
      message: 'restricted: revoked: by the founder',
    })
    const stranger = await hub({
      challenge: 'c',
      authAnswer: 'restricted: not a member (revoked?)',
    })
    expect(await authenticate(stranger.client, { secret })).toMatchObject({
      code: 'refused',
      reason: 'restricted',
    })
    const plain = await hub({ authAnswer: '' })
    expect(await authenticate(plain.client, { secret, challengeWaitMs: 200 })).toEqual({
      code: 'no-challenge',
    })
    expect(plain.auths).toHaveLength(0)
  })

  it('reads OK and CLOSED prefixes once', () => {
    expect(relayVerdict('duplicate: already have this event')).toEqual({
      code: 'duplicate',
      reason: 'already have this event',
    })
    expect(relayVerdict('no prefix here')).toEqual({ code: '', reason: 'no prefix here' })
    expect(saysRevoked('restricted: revoked: by the founder')).toBe(true)
    expect(saysRevoked('restricted: revoked')).toBe(true)
    // Only the prefix counts: the word elsewhere is not a revocation.
    expect(saysRevoked('restricted: not a member (revoked?)')).toBe(false)
    expect(saysRevoked('blocked: restricted: revoked')).toBe(false)
    expect(saysRevoked(undefined)).toBe(false)
  })
})
