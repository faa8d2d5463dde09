import { describe, expect, it, onTestFinished } from 'vitest'
import {
  publicKeyOf,
  signEvent,
  verifyEventSignature,
  type NostrEvent,
} from '../../src/events/event.js'
import { makeChannelDefinition } from '../../src/events/channel-def.js'
import { ChannelBook } from '../../src/grants/channels.js'
import { GrantVerifier } from '../../src/grants/verifier.js'
import { HubLink } from '../../src/link/hub-link.js'
import { definitionsFirst } from '../../src/node/channel-sync.js'
import { OutboxPump } from '../../src/node/outbox-pump.js'
import { NodeStore } from '../../src/store/node-store.js'
import { startTestHub, type TestHub } from '../helpers/hub.js'
import { RawClient } from '../helpers/raw-client.js'
import { tempDir } from '../helpers/tmp.js'
import { newSecret, signTestGrant } from '../helpers/secrets.js'

const now = () => Math.floor(Date.now() / 1000)

async function publish(c: RawClient, e: NostrEvent) {
  c.send(['EVENT', e])
  return c.ok(e.id)
}

/**
 * Alice's node: its store, its channel book, and an outbox pump that sends each private channel's
 * definition in effect before the channel's events, linked to one hub as Alice's device.
 */
async function aliceNode(t: TestHub) {
  const founder = await t.member()
  const grant = async (e: NostrEvent) => expect((await publish(founder, e))[2]).toBe(true)
  const aliceSk = newSecret()
  const deviceSk = newSecret()
  const at = now() - 100
  const aliceGrant = signTestGrant(
    { subject: publicKeyOf(aliceSk), role: 'owner', fleet: t.owner },
    t.ownerSk,
    at,
  )
  const deviceGrant = signTestGrant(
    { subject: publicKeyOf(deviceSk), role: 'device', fleet: t.owner, parent: aliceGrant.id },
    aliceSk,
    at,
  )
  const carolSk = newSecret()
  const carolGrant = signTestGrant(
    { subject: publicKeyOf(carolSk), role: 'owner', fleet: t.owner },
    t.ownerSk,
    at,
  )
  for (const g of [aliceGrant, deviceGrant, carolGrant]) await grant(g)
  const store = new NodeStore(tempDir())
  onTestFinished(() => store.close())
  const verifier = new GrantVerifier({ founder: t.owner, verifySignature: verifyEventSignature })
  for (const g of [aliceGrant, deviceGrant, carolGrant]) verifier.add(g)
  const book = new ChannelBook(verifier)
  const log: string[] = []
  /** Every event the pump was told to send first. */
  const sentFirst: string[] = []
  const pump = new OutboxPump(store, {
    now,
    log: (l) => log.push(l),
    stopped: () => false,
    delivered: () => undefined,
    prerequisites: (event, hub) => {
      const needs = definitionsFirst(book, store, event, hub, now())
      if ('first' in needs) sentFirst.push(...needs.first.map((e) => e.id))
      return needs
    },
  })
  const link = new HubLink({
    url: t.url,
    deviceSecret: deviceSk,
    chain: () => [],
    kinds: [9],
    fullKinds: [],
    cursor: () => undefined,
    saveCursor: () => undefined,
    deliver: () => Promise.resolve(),
    log: () => undefined,
  })
  onTestFinished(() => link.stop())
  link.start()
  await expect.poll(() => link.authenticated, { timeout: 10_000 }).toBe(true)
  /** A definition Alice's node holds (as if synced earlier): stored and in its book. */
  const holds = (e: NostrEvent) => {
    store.events.insertBatch([e])
    expect(book.add(e, { now: now() }).status).toBe('accepted')
  }
  const define = (
    sk: Uint8Array,
    channel: string,
    creator: string,
    members: string[],
    at: number,
  ) =>
    signEvent(
      makeChannelDefinition({ channel, fleet: t.owner, creator, private: true, members }, at),
      sk,
    )
  const post = (channel: string, content: string) =>
    signEvent({ kind: 9, created_at: now(), tags: [['h', channel]], content }, deviceSk)
  return {
    sentFirst,
    founder,
    aliceSk,
    alice: publicKeyOf(aliceSk),
    carolSk,
    carol: publicKeyOf(carolSk),
    store,
    book,
    pump,
    link,
    holds,
    define,
    post,
  }
}

describe('a node sends a private channel’s events only to a hub that holds its definition', () => {
  it('republishes the definition in effect first, once', async () => {
    const t = await startTestHub()
    const a = await aliceNode(t)
    const def = a.define(a.aliceSk, 'secret', a.alice, [a.alice], now() - 10)
    a.holds(def)
    // This hub never received the definition: it would take #secret for open.
    expect(t.hub.channels.isPrivate('secret', now())).toBe(false)
    const outsider = await t.member()
    await outsider.req('live', { kinds: [9], limit: 0 })
    const first = a.post('secret', 'for alice only')
    expect(await a.pump.send(first, [a.link], 5000)).toEqual({ hub: t.url, ok: true, message: '' })
    expect(t.hub.channels.definition('secret', now())?.id).toBe(def.id)
    expect(a.store.hubHolds(def.id, t.url)).toBe(true)
    // The founder (not listed) connected before: it never received the message live.
    const open = a.post('general', 'marker')
    expect((await a.pump.send(open, [a.link], 5000))?.ok).toBe(true)
    await outsider.next((f) => f[0] === 'EVENT' && (f[2] as NostrEvent).content === 'marker')
    expect(
      outsider.frames.filter(
        (f) => f[0] === 'EVENT' && (f[2] as NostrEvent).content === 'for alice only',
      ),
    ).toEqual([])
    const second = a.post('secret', 'again')
    expect((await a.pump.send(second, [a.link], 5000))?.ok).toBe(true)
    expect(a.sentFirst).toEqual([def.id])
  })

  it('holds an event back, and says why, when the hub refuses the definition it needs first', async () => {
    const t = await startTestHub()
    const a = await aliceNode(t)
    // Alice's node still has her own old definition of #team; the hub has a newer one by the
    // founder that names Carol the creator and lists only her.
    a.holds(a.define(a.aliceSk, 'team', a.alice, [a.alice], now() - 50))
    const founders = a.define(t.ownerSk, 'team', a.carol, [a.carol], now())
    expect((await publish(a.founder, founders))[2]).toBe(true)
    const held = a.post('team', 'not for the whole fleet')
    const answer = await a.pump.send(held, [a.link], 5000)
    expect(answer).toEqual({
      hub: t.url,
      ok: false,
      message:
        'not sent: this hub refused the definition of #team it needs first (restricted: channel-not-allowed: channel #team is not allowed for this key)',
    })
    expect(a.store.deliveries(held.id)).toEqual([
      { hub: t.url, state: 'refused', message: answer!.message },
    ])
    expect((await a.founder.req('q', { ids: [held.id] })).events).toEqual([])
  })
})
