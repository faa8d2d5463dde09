import { describe, expect, it, onTestFinished } from 'vitest'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { makeChannelDefinition } from '../../src/events/channel-def.js'
import { Kind } from '../../src/events/kinds.js'
import { initIdentity, loadIdentity } from '../../src/identity/keys.js'
import { ChannelSync } from '../../src/node/channel-sync.js'
import { ensureOwnDeviceGrant, openFleetNode } from '../../src/node/fleet.js'
import { NodeStore } from '../../src/store/node-store.js'
import { startTestHub } from '../helpers/hub.js'
import { tempDir } from '../helpers/tmp.js'
import { newSecret, signTestGrant } from '../helpers/secrets.js'

const now = () => Math.floor(Date.now() / 1000)

describe('kith channel commands store nothing unchecked', () => {
  it('ignores the definitions a hub returns that fail the rules, and keeps the rest', async () => {
    const t = await startTestHub()
    const founder = await t.member()
    const publish = async (e: NostrEvent) => {
      founder.send(['EVENT', e])
      return founder.ok(e.id)
    }
    const bobSk = newSecret()
    const bobDeviceSk = newSecret()
    const bobGrant = signTestGrant(
      { subject: publicKeyOf(bobSk), role: 'owner', fleet: t.owner },
      t.ownerSk,
      now() - 100,
    )
    const bobDevice = signTestGrant(
      { subject: publicKeyOf(bobDeviceSk), role: 'device', fleet: t.owner, parent: bobGrant.id },
      bobSk,
      now() - 100,
    )
    for (const g of [bobGrant, bobDevice]) expect((await publish(g))[2]).toBe(true)
    const def = (sk: Uint8Array, channel: string, at: number) =>
      signEvent(
        makeChannelDefinition(
          { channel, fleet: t.owner, creator: publicKeyOf(sk), private: true, members: [] },
          at,
        ),
        sk,
      )
    const good = def(bobSk, 'dev', now() - 50)
    expect((await publish(good))[2]).toBe(true)
    // What a hub should never hold, but a broken or hostile one might return: a definition
    // dated before its author was admitted, and one signed by a device.
    const early = def(bobSk, 'ops', now() - 1000)
    const byDevice = def(bobDeviceSk, 'x', now() - 40)
    t.hub.store.insertBatch([early, byDevice])

    const home = tempDir()
    initIdentity({ home, ownerSecret: t.ownerSk })
    const node = openFleetNode(loadIdentity(home))
    onTestFinished(() => node.book.close())
    ensureOwnDeviceGrant(node, now())
    const sync = await ChannelSync.open(node, [t.url], now())
    try {
      expect(sync.unreached).toEqual([])
      expect(sync.ignored.map((i) => [i.channel, i.message])).toEqual([
        ['ops', 'no-authority: the definition is dated before its author was admitted'],
        [
          'x',
          'not-an-owner: channels are defined by people (owner keys), not by devices, agents or outsiders',
        ],
      ])
      expect(sync.book.definitions(now()).map((d) => d.id)).toEqual([good.id])
    } finally {
      sync.close()
    }
    const store = new NodeStore(home)
    try {
      expect([...store.events.allVersionsOfKind(Kind.ChannelDefinition)].map((e) => e.id)).toEqual([
        good.id,
      ])
      // The hub returned all three: it holds them, whatever this node made of them.
      expect([good, early, byDevice].map((e) => store.hubHolds(e.id, t.url))).toEqual([
        true,
        true,
        true,
      ])
    } finally {
      store.close()
    }
  })
})
