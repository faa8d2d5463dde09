import { describe, expect, it } from 'vitest'
import { nip77 } from 'nostr-tools'
import { makeChannelDefinition } from '../../src/events/channel-def.js'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { asResponderQuery } from '../../src/hub/negentropy.js'
import { startTestHub, type TestHub } from '../helpers/hub.js'
import { RawClient, type Frame } from '../helpers/raw-client.js'
import { newSecret, signTestGrant } from '../helpers/secrets.js'

const now = () => Math.floor(Date.now() / 1000)

/** Publishes in windows the hub takes (at most 256 awaiting verification per connection). */
async function publish(c: RawClient, events: NostrEvent[]) {
  for (let i = 0; i < events.length; i += 200) {
    const window = events.slice(i, i + 200)
    for (const e of window) c.send(['EVENT', e])
    for (const e of window) {
      const ok = await c.ok(e.id)
      expect(ok[2], String(ok[3])).toBe(true)
    }
  }
}

/** Runs a whole reconciliation as a client (nostr-tools' Negentropy, the initiator). */
async function reconcileAs(
  c: RawClient,
  filter: Record<string, unknown>,
  mine: NostrEvent[],
): Promise<{ need: string[]; have: string[]; rounds: number }> {
  const storage = new nip77.NegentropyStorageVector()
  for (const e of mine) storage.insert(e.created_at, e.id)
  storage.seal()
  const neg = new nip77.Negentropy(storage)
  const need: string[] = []
  const have: string[] = []
  let rounds = 0
  c.send(['NEG-OPEN', 'n1', filter, neg.initiate()])
  for (;;) {
    const f = await c.next((x) => (x[0] === 'NEG-MSG' || x[0] === 'NEG-ERR') && x[1] === 'n1')
    if (f[0] === 'NEG-ERR') throw new Error(String(f[2]))
    rounds++
    const next = neg.reconcile(
      String(f[2]),
      (id) => have.push(id),
      (id) => need.push(id),
    )
    if (next === null) break
    c.send(['NEG-MSG', 'n1', next])
  }
  c.send(['NEG-CLOSE', 'n1'])
  return { need: need.sort(), have: have.sort(), rounds }
}

const chats = (t: TestHub, n: number, base: number, channel = 'ops') =>
  Array.from({ length: n }, (_, i) =>
    t.sign({ kind: 9, created_at: base + (i % 600), tags: [['h', channel]], content: `m${i}` }),
  )

describe('NIP-77 at the hub', () => {
  it('finds exactly the differences in a set of thousands, in a few rounds', async () => {
    const t = await startTestHub({ limits: { eventsPerSecond: 0 } })
    const c = await t.member()
    const all = chats(t, 1200, now() - 1000)
    await publish(c, all)
    const missing = [all[5]!, all[700]!, all[1199]!, ...all.slice(100, 110)]
    const extra = chats(t, 4, now() - 500, 'elsewhere')
    const mine = [...all.filter((e) => !missing.includes(e)), ...extra]
    const r = await reconcileAs(c, { kinds: [9] }, mine)
    expect(r.need).toEqual(missing.map((e) => e.id).sort())
    expect(r.have).toEqual(extra.map((e) => e.id).sort())
    expect(r.rounds).toBeLessThan(6)
  })

  it('covers only what the member may read: no private channel they are not in', async () => {
    const t = await startTestHub()
    const founder = await t.member()
    const bobSk = newSecret()
    const bob = publicKeyOf(bobSk)
    const grant = signTestGrant({ subject: bob, role: 'owner', fleet: t.owner }, t.ownerSk, now())
    const definition = signEvent(
      makeChannelDefinition(
        { channel: 'secret', fleet: t.owner, creator: t.owner, private: true, members: [t.owner] },
        now() - 100,
      ),
      t.ownerSk,
    )
    await publish(founder, [grant, definition])
    const open = chats(t, 3, now() - 50, 'ops')
    const hidden = chats(t, 3, now() - 50, 'secret')
    await publish(founder, [...open, ...hidden])
    const c = await RawClient.connect(t.url)
    expect((await c.auth(t.url, bobSk))[2]).toBe(true)
    const r = await reconcileAs(c, { kinds: [9] }, [])
    expect(r.need).toEqual(open.map((e) => e.id).sort())
    // The founder, a member of #secret, reconciles over both.
    expect((await reconcileAs(founder, { kinds: [9] }, [])).need).toHaveLength(6)
    c.close()
  })

  it('refuses strangers, bad messages and sets over its limit with NEG-ERR and a reason', async () => {
    const t = await startTestHub({ limits: { negMaxItems: 2 } })
    const stranger = await t.connect()
    stranger.send(['NEG-OPEN', 's', { kinds: [9] }, '6100000200'])
    expect(await stranger.next((f: Frame) => f[0] === 'NEG-ERR')).toEqual([
      'NEG-ERR',
      's',
      'auth-required: authenticate (NIP-42) as a fleet member first',
    ])
    const c = await t.member()
    c.send(['NEG-OPEN', 'bad', { kinds: [9] }, '60ff'])
    expect(String((await c.next((f) => f[0] === 'NEG-ERR'))[2])).toMatch(/^invalid: /)
    c.send(['NEG-OPEN', 'f', { kinds: 'nine' }, '61'])
    expect(String((await c.next((f) => f[0] === 'NEG-ERR' && f[1] === 'f'))[2])).toMatch(
      /^invalid: /,
    )
    await publish(c, chats(t, 3, now() - 10))
    const storage = new nip77.NegentropyStorageVector()
    storage.seal()
    c.send(['NEG-OPEN', 'big', { kinds: [9] }, new nip77.Negentropy(storage).initiate()])
    expect(String((await c.next((f) => f[0] === 'NEG-ERR' && f[1] === 'big'))[2])).toBe(
      'blocked: the filter matches more than 2 events; narrow it (since/until)',
    )
  })

  it('is listed in NIP-11', async () => {
    const t = await startTestHub()
    const res = await fetch(t.url.replace(/^ws/, 'http'), {
      headers: { Accept: 'application/nostr+json' },
    })
    const info = (await res.json()) as { supported_nips: number[] }
    expect(info.supported_nips).toContain(77)
  })

  it('rewrites only IdList ranges of a query, bounds byte for byte', () => {
    // Version, then a bound (timestamp 0, id length 0) in IdList mode with one id, then a
    // bound (infinity) in Skip mode.
    const id = 'ab'.repeat(32)
    const q = `61` + `0000` + `0201${id}` + `0000` + `00`
    expect(asResponderQuery(q)).toBe(`61` + `0000` + `01${'00'.repeat(16)}` + `0000` + `00`)
    expect(() => asResponderQuery('61000002')).toThrow(/ends prematurely/)
  })
})
