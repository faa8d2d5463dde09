import { describe, expect, it, onTestFinished } from 'vitest'
import WebSocket from 'ws'
import { makeChannelDefinition } from '../../src/events/channel-def.js'
import { signEvent, type NostrEvent } from '../../src/events/event.js'
import { makeRevocation } from '../../src/grants/revocation.js'
import { PeerSync, type PeerRound } from '../../src/link/peer-sync.js'
import { RelayClient } from '../../src/link/relay-client.js'
import { startTestHub } from '../helpers/hub.js'
import { newKey, signTestGrant } from '../helpers/secrets.js'
import { startStandardRelay } from '../helpers/standard-relay.js'

// kith-channels/1 and kith-hub/1 (peering), issue 29 item 6: a removed person can still sign a
// definition dated before their removal, which a hub takes only from a member's own connection,
// never through a peering; and a peering relays live only once definitions are across.

const now = () => Math.floor(Date.now() / 1000)

describe('a removed person’s back-dated definition', () => {
  it('attacker: it does not come in through a relay the hub peers with; a member’s own connection may still bring it', async () => {
    const t = await startTestHub({ limits: { eventsPerSecond: 0 } })
    const bob = newKey()
    const hubKey = newKey()
    const bobGrant = signTestGrant(
      { subject: bob.pk, role: 'owner', fleet: t.owner, deleg: true, name: 'bob' },
      t.ownerSk,
      now() - 600,
    )
    const hubGrant = signTestGrant(
      { subject: hubKey.pk, role: 'hub', fleet: t.owner, name: 'peer' },
      t.ownerSk,
      now() - 600,
    )
    const removal = signEvent(
      makeRevocation({ fleet: t.owner, keys: [bob.pk], reason: 'left' }, now() - 100),
      t.ownerSk,
    )
    const founder = await t.member()
    for (const e of [bobGrant, hubGrant, removal]) {
      founder.send(['EVENT', e])
      expect((await founder.ok(e.id))[2]).toBe(true)
    }
    // Bob, removed, dates a definition of a channel nobody defined yet before his removal.
    const squat = signEvent(
      makeChannelDefinition(
        { channel: 'deploy', fleet: t.owner, creator: bob.pk, private: true, members: [bob.pk] },
        now() - 200,
      ),
      bob.sk,
    )
    const relay = await startStandardRelay({ nip77: true })
    const atRelay = await RelayClient.connect(new WebSocket(relay.url), { url: relay.url })
    onTestFinished(() => atRelay.close())
    for (const e of [bobGrant, removal, squat]) expect((await atRelay.publish(e)).ok).toBe(true)

    let first!: (r: PeerRound) => void
    const synced = new Promise<PeerRound>((r) => (first = r))
    const sync = new PeerSync({
      peerUrl: relay.url,
      localUrl: t.url,
      secretKey: hubKey.sk,
      store: t.hub.store,
      fleet: t.owner,
      log: () => {},
      onRound: (r) => first(r),
    })
    sync.start()
    onTestFinished(() => sync.close())
    const round = await synced
    expect(round.refused).toBeGreaterThanOrEqual(1)
    expect(t.hub.store.getEvent(squat.id)).toBeUndefined()
    expect(t.hub.channels.isPrivate('deploy', now())).toBe(false)

    // A hub key's own connection is refused it with a reason; a member's is not (the spec's
    // "only with a current member's help").
    const peer = await t.connect()
    expect((await peer.auth(t.url, hubKey.sk))[2]).toBe(true)
    peer.send(['EVENT', squat])
    const refused = await peer.ok(squat.id)
    expect(refused[2]).toBe(false)
    expect(String(refused[3])).toMatch(/^restricted: removed-author/)
    founder.send(['EVENT', squat])
    expect((await founder.ok(squat.id))[2]).toBe(true)
  })
})

describe('peering relays live only after the definitions', () => {
  it('attacker: a recent message in a private channel it does not belong to never reaches a hub that lacked the definition', async () => {
    const t = await startTestHub({ limits: { eventsPerSecond: 0 } })
    const carol = newKey()
    const hubKey = newKey()
    const grants = [
      signTestGrant(
        { subject: carol.pk, role: 'owner', fleet: t.owner, name: 'carol' },
        t.ownerSk,
        now() - 600,
      ),
      signTestGrant(
        { subject: hubKey.pk, role: 'hub', fleet: t.owner, name: 'peer' },
        t.ownerSk,
        now() - 600,
      ),
    ]
    const founder = await t.member()
    for (const e of grants) {
      founder.send(['EVENT', e])
      expect((await founder.ok(e.id))[2]).toBe(true)
    }
    // The founder made #board private to themself; only the relay got the definition. Carol,
    // not a member, posted there through the relay a moment ago (a relay takes anything).
    const board = signEvent(
      makeChannelDefinition(
        { channel: 'board', fleet: t.owner, creator: t.owner, private: true, members: [t.owner] },
        now() - 300,
      ),
      t.ownerSk,
    )
    const leak: NostrEvent = signEvent(
      { kind: 9, created_at: now() - 5, tags: [['h', 'board']], content: 'not for carol' },
      carol.sk,
    )
    const relay = await startStandardRelay({ nip77: true })
    const atRelay = await RelayClient.connect(new WebSocket(relay.url), { url: relay.url })
    onTestFinished(() => atRelay.close())
    for (const e of [...grants, board, leak]) expect((await atRelay.publish(e)).ok).toBe(true)

    let first!: (r: PeerRound) => void
    const synced = new Promise<PeerRound>((r) => (first = r))
    const sync = new PeerSync({
      peerUrl: relay.url,
      localUrl: t.url,
      secretKey: hubKey.sk,
      store: t.hub.store,
      fleet: t.owner,
      log: () => {},
      onRound: (r) => first(r),
    })
    sync.start()
    onTestFinished(() => sync.close())
    await synced
    expect(t.hub.store.getEvent(board.id)).toBeDefined()
    expect(t.hub.store.getEvent(leak.id)).toBeUndefined()
  })
})
