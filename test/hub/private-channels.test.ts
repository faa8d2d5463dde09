import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { makeChannelDefinition } from '../../src/events/channel-def.js'
import { signGrant, type GrantSpec } from '../../src/grants/grant.js'
import { makeRevocation } from '../../src/grants/revocation.js'
import { startHub } from '../../src/hub/server.js'
import { startTestHub, type TestHub } from '../helpers/hub.js'
import { RawClient } from '../helpers/raw-client.js'

const now = () => Math.floor(Date.now() / 1000)

async function publish(c: RawClient, e: NostrEvent) {
  c.send(['EVENT', e])
  return c.ok(e.id)
}

interface Person {
  sk: Uint8Array
  pubkey: string
  grant: NostrEvent
  deviceSk: Uint8Array
  device: string
}

/**
 * The founder admits Alice, Bob and Carol as owners (none of them admins); each has one device.
 * Everything is published through the founder's connection.
 */
async function fleet(t: TestHub) {
  const founder = await t.member()
  const g = (spec: Omit<GrantSpec, 'fleet' | 'proof'>, sk: Uint8Array, subjectSk: Uint8Array) =>
    signGrant({ ...spec, fleet: t.owner }, sk, subjectSk, now())
  const person = async (name: string): Promise<Person> => {
    const sk = generateSecretKey()
    const deviceSk = generateSecretKey()
    const grant = g({ subject: publicKeyOf(sk), role: 'owner', name }, t.ownerSk, sk)
    const deviceGrant = g(
      { subject: publicKeyOf(deviceSk), role: 'device', parent: grant.id, name: `${name}-laptop` },
      sk,
      deviceSk,
    )
    expect((await publish(founder, grant))[2]).toBe(true)
    expect((await publish(founder, deviceGrant))[2]).toBe(true)
    return { sk, pubkey: publicKeyOf(sk), grant, deviceSk, device: publicKeyOf(deviceSk) }
  }
  return {
    founder,
    alice: await person('alice'),
    bob: await person('bob'),
    carol: await person('carol'),
  }
}

/** A client authenticated as each of `sks` (a connection may AUTH as several keys). */
async function connectAs(t: TestHub, ...sks: Uint8Array[]): Promise<RawClient> {
  const c = await t.connect()
  for (const sk of sks) expect((await c.auth(t.url, sk))[2]).toBe(true)
  return c
}

function define(
  t: TestHub,
  sk: Uint8Array,
  spec: { channel: string; creator: string; members?: string[]; private?: boolean },
  createdAt = now(),
): NostrEvent {
  return signEvent(
    makeChannelDefinition(
      {
        channel: spec.channel,
        fleet: t.owner,
        creator: spec.creator,
        private: spec.private ?? true,
        members: spec.members ?? [],
      },
      createdAt,
    ),
    sk,
  )
}

const chat = (sk: Uint8Array, channel: string, content: string) =>
  signEvent({ kind: 9, created_at: now(), tags: [['h', channel]], content }, sk)

/** The contents of the live EVENTs a client has received on `subId` so far (consumed). */
function received(c: RawClient, subId: string): string[] {
  const out: string[] = []
  for (const f of [...c.frames]) {
    if (f[0] === 'EVENT' && f[1] === subId) {
      out.push((f[2] as NostrEvent).content)
      c.frames.splice(c.frames.indexOf(f), 1)
    }
  }
  return out
}

/** Waits for the live EVENT carrying `content` on `subId`. */
function waitFor(c: RawClient, subId: string, content: string) {
  return c.next(
    (f) => f[0] === 'EVENT' && f[1] === subId && (f[2] as NostrEvent).content === content,
  )
}

/** #secret, private, with Alice its creator and only member; published and accepted. */
async function aliceOnlySecret(
  t: Awaited<ReturnType<typeof startTestHub>>,
  f: Awaited<ReturnType<typeof fleet>>,
): Promise<NostrEvent> {
  const def = define(t, f.alice.sk, {
    channel: 'secret',
    creator: f.alice.pubkey,
    members: [f.alice.pubkey],
  })
  expect((await publish(f.founder, def))[2]).toBe(true)
  return def
}

describe('private channels at the hub', () => {
  it('delivers a private channel only to its members, live and stored, and refuses outsiders', async () => {
    const t = await startTestHub()
    const f = await fleet(t)
    const def = define(t, f.alice.sk, {
      channel: 'secret',
      creator: f.alice.pubkey,
      members: [f.alice.pubkey, f.carol.pubkey],
    })
    expect(await publish(f.founder, def)).toEqual(['OK', def.id, true, ''])

    const aliceDev = await connectAs(t, f.alice.deviceSk)
    const bobDev = await connectAs(t, f.bob.deviceSk)
    const carolDev = await connectAs(t, f.carol.deviceSk)
    for (const c of [aliceDev, bobDev, carolDev]) {
      expect((await c.req('live', { kinds: [9], limit: 0 })).end[0]).toBe('EOSE')
    }

    // Alice's device posts in #secret, then in the open #general (the positive marker).
    const secret = chat(f.alice.deviceSk, 'secret', 'the launch is friday')
    expect(await publish(aliceDev, secret)).toEqual(['OK', secret.id, true, ''])
    const open = chat(f.alice.deviceSk, 'general', 'hello everyone')
    expect((await publish(aliceDev, open))[2]).toBe(true)

    await waitFor(carolDev, 'live', 'hello everyone')
    await waitFor(bobDev, 'live', 'hello everyone')
    expect(received(bobDev, 'live')).toEqual([])
    expect(received(carolDev, 'live')).toEqual(['the launch is friday'])

    // Stored: the same split, with or without a filter naming the channel.
    const stored = async (c: RawClient, filter: object) =>
      ((await c.req(`q${Math.random()}`, filter)).events as NostrEvent[]).map((e) => e.content)
    expect(await stored(bobDev, { kinds: [9] })).toEqual(['hello everyone'])
    expect(await stored(bobDev, { '#h': ['secret'] })).toEqual([])
    expect(await stored(bobDev, { ids: [secret.id] })).toEqual([])
    expect((await stored(carolDev, { kinds: [9] })).sort()).toEqual([
      'hello everyone',
      'the launch is friday',
    ])
    // limit counts what the reader may see: Bob's newest 1 is the open message.
    expect(await stored(bobDev, { kinds: [9], limit: 1 })).toEqual(['hello everyone'])

    // An outsider's post is refused; so is one by its agent or device on any connection.
    const intruder = chat(f.bob.deviceSk, 'secret', 'let me in')
    expect(await publish(bobDev, intruder)).toEqual([
      'OK',
      intruder.id,
      false,
      'restricted: channel-not-allowed: channel #secret is not allowed for this key',
    ])
    expect((await publish(aliceDev, intruder))[3]).toMatch(
      /^restricted: channel-not-allowed: channel #secret/,
    )

    // The definition (and its member list) is seen by members and by the founder, not by Bob.
    expect(await stored(bobDev, { kinds: [34140] })).toEqual([])
    expect(((await carolDev.req('d', { kinds: [34140] })).events as NostrEvent[])[0]?.id).toBe(
      def.id,
    )
    expect(((await f.founder.req('d', { kinds: [34140] })).events as NostrEvent[])[0]?.id).toBe(
      def.id,
    )
  })

  it('applies a new definition at once: added members receive, removed ones stop', async () => {
    const t = await startTestHub()
    const f = await fleet(t)
    const t0 = now()
    const first = define(
      t,
      f.alice.sk,
      { channel: 'secret', creator: f.alice.pubkey, members: [f.alice.pubkey] },
      t0,
    )
    expect((await publish(f.founder, first))[2]).toBe(true)
    const aliceDev = await connectAs(t, f.alice.deviceSk)
    const bobDev = await connectAs(t, f.bob.deviceSk)
    await bobDev.req('live', { kinds: [9, 34140], limit: 0 })

    const before = chat(f.alice.deviceSk, 'secret', 'before bob')
    expect((await publish(aliceDev, before))[2]).toBe(true)

    const withBob = define(
      t,
      f.alice.sk,
      { channel: 'secret', creator: f.alice.pubkey, members: [f.alice.pubkey, f.bob.pubkey] },
      t0 + 1,
    )
    expect((await publish(aliceDev, withBob))[2]).toBe(true)
    // Bob sees the definition that admits him, then the history and new messages.
    await bobDev.next((m) => m[0] === 'EVENT' && (m[2] as NostrEvent).id === withBob.id)
    const during = chat(f.alice.deviceSk, 'secret', 'welcome bob')
    expect((await publish(aliceDev, during))[2]).toBe(true)
    await waitFor(bobDev, 'live', 'welcome bob')
    const history = (await bobDev.req('h', { '#h': ['secret'] })).events as NostrEvent[]
    expect(history.map((e) => e.content).sort()).toEqual(['before bob', 'welcome bob'])
    const bobPost = chat(f.bob.deviceSk, 'secret', 'thanks')
    expect((await publish(bobDev, bobPost))[2]).toBe(true)
    await waitFor(bobDev, 'live', 'thanks')

    // The founder (not a member, but it may change any channel) removes Bob again.
    const withoutBob = define(
      t,
      t.ownerSk,
      { channel: 'secret', creator: f.alice.pubkey, members: [f.alice.pubkey] },
      t0 + 2,
    )
    expect((await publish(f.founder, withoutBob))[2]).toBe(true)
    const after = chat(f.alice.deviceSk, 'secret', 'bob is gone')
    expect((await publish(aliceDev, after))[2]).toBe(true)
    const marker = chat(f.alice.deviceSk, 'general', 'marker')
    expect((await publish(aliceDev, marker))[2]).toBe(true)
    await waitFor(bobDev, 'live', 'marker')
    expect(received(bobDev, 'live')).toEqual([])
    expect((await bobDev.req('h2', { '#h': ['secret'] })).events).toEqual([])
    const again = chat(f.bob.deviceSk, 'secret', 'still here?')
    expect((await publish(bobDev, again))[3]).toMatch(
      /^restricted: channel-not-allowed: channel #secret/,
    )
  })

  it('stops delivering to a revoked member at once, even on a connection that stays', async () => {
    const t = await startTestHub()
    const f = await fleet(t)
    const def = define(t, f.alice.sk, {
      channel: 'secret',
      creator: f.alice.pubkey,
      members: [f.alice.pubkey, f.bob.pubkey],
    })
    expect((await publish(f.founder, def))[2]).toBe(true)
    const aliceDev = await connectAs(t, f.alice.deviceSk)
    // One connection proves Bob's device and Carol's device: it stays up after Bob is revoked.
    const shared = await connectAs(t, f.bob.deviceSk, f.carol.deviceSk)
    const bobOnly = await connectAs(t, f.bob.deviceSk)
    await shared.req('live', { kinds: [9], limit: 0 })
    await bobOnly.req('live', { kinds: [9], limit: 0 })

    const one = chat(f.alice.deviceSk, 'secret', 'one')
    expect((await publish(aliceDev, one))[2]).toBe(true)
    await waitFor(shared, 'live', 'one')
    await waitFor(bobOnly, 'live', 'one')

    const revocation = signEvent(
      makeRevocation({ fleet: t.owner, grants: [f.bob.grant.id] }, now()),
      t.ownerSk,
    )
    expect((await publish(f.founder, revocation))[2]).toBe(true)
    expect((await bobOnly.waitClosed()).code).toBe(1008)

    const two = chat(f.alice.deviceSk, 'secret', 'two')
    expect((await publish(aliceDev, two))[2]).toBe(true)
    const marker = chat(f.alice.deviceSk, 'general', 'marker')
    expect((await publish(aliceDev, marker))[2]).toBe(true)
    await waitFor(shared, 'live', 'marker')
    expect(received(shared, 'live')).toEqual([])
    expect((await shared.req('h', { '#h': ['secret'] })).events).toEqual([])
  })

  it('lets a connection read once it proves a member key (NIP-42 AUTH again)', async () => {
    const t = await startTestHub()
    const f = await fleet(t)
    await aliceOnlySecret(t, f)
    const aliceDev = await connectAs(t, f.alice.deviceSk)
    const c = await connectAs(t, f.bob.deviceSk)
    await c.req('live', { kinds: [9], limit: 0 })
    expect((await publish(aliceDev, chat(f.alice.deviceSk, 'secret', 'one')))[2]).toBe(true)
    expect((await publish(aliceDev, chat(f.alice.deviceSk, 'general', 'marker')))[2]).toBe(true)
    await waitFor(c, 'live', 'marker')
    expect(received(c, 'live')).toEqual([])
    expect((await c.auth(t.url, f.alice.deviceSk))[2]).toBe(true)
    expect((await publish(aliceDev, chat(f.alice.deviceSk, 'secret', 'two')))[2]).toBe(true)
    await waitFor(c, 'live', 'two')
    const stored = (await c.req('h', { '#h': ['secret'] })).events as NostrEvent[]
    expect(stored.map((e) => e.content).sort()).toEqual(['one', 'two'])
  })

  it('refuses definitions from anyone but the founder, an admin or the creator', async () => {
    const t = await startTestHub()
    const f = await fleet(t)
    await aliceOnlySecret(t, f)
    const bobTakeover = define(
      t,
      f.bob.sk,
      { channel: 'secret', creator: f.alice.pubkey, members: [f.bob.pubkey] },
      now() + 1,
    )
    // Bob may neither see nor change #secret: told only what a key whose grant excludes it is.
    expect((await publish(f.founder, bobTakeover))[3]).toBe(
      'restricted: channel-not-allowed: channel #secret is not allowed for this key',
    )
    const newCreator = define(
      t,
      f.alice.sk,
      { channel: 'secret', creator: f.bob.pubkey, members: [] },
      now() + 1,
    )
    expect((await publish(f.founder, newCreator))[3]).toMatch(/^restricted: creator-changed: /)
    const byDevice = define(t, f.bob.deviceSk, { channel: 'other', creator: f.bob.device })
    expect((await publish(f.founder, byDevice))[3]).toMatch(/^restricted: not-an-owner: /)
    const onBehalf = define(t, f.bob.sk, { channel: 'other', creator: f.carol.pubkey })
    expect((await publish(f.founder, onBehalf))[3]).toMatch(/^restricted: no-authority: /)
    const broken = signEvent(
      { kind: 34140, created_at: now(), tags: [['d', '#Bad']], content: '' },
      f.bob.sk,
    )
    expect((await publish(f.founder, broken))[3]).toMatch(/^invalid: malformed: d must be/)
    // An older definition than the one in effect changes nothing.
    const older = define(
      t,
      f.alice.sk,
      { channel: 'secret', creator: f.alice.pubkey, private: false },
      now() - 30,
    )
    expect((await publish(f.founder, older))[3]).toBe(
      'duplicate: a newer definition of this channel is in effect',
    )
    // An admin (owner grant with deleg) may change it.
    const adminSk = generateSecretKey()
    const adminGrant = signGrant(
      { subject: publicKeyOf(adminSk), role: 'owner', deleg: true, fleet: t.owner },
      t.ownerSk,
      adminSk,
      now(),
    )
    expect((await publish(f.founder, adminGrant))[2]).toBe(true)
    const byAdmin = define(
      t,
      adminSk,
      { channel: 'secret', creator: f.alice.pubkey, private: false },
      now() + 2,
    )
    expect(await publish(f.founder, byAdmin)).toEqual(['OK', byAdmin.id, true, ''])
    expect(t.hub.channels.isPrivate('secret', now())).toBe(false)
  })

  it('keeps a channel private across a hub restart', async () => {
    const t = await startTestHub()
    const f = await fleet(t)
    await aliceOnlySecret(t, f)
    expect((await publish(f.founder, chat(f.alice.deviceSk, 'secret', 'hidden')))[2]).toBe(true)
    expect((await publish(f.founder, chat(f.alice.deviceSk, 'general', 'open')))[2]).toBe(true)
    await t.hub.close()

    const hub = await startHub({
      port: 0,
      dbPath: join(t.dir, 'hub.db'),
      founder: t.owner,
      verifyWorkers: 0,
    })
    onTestFinished(() => hub.close())
    const bob = await RawClient.connect(hub.url)
    onTestFinished(() => bob.close())
    expect((await bob.auth(hub.url, f.bob.deviceSk))[2]).toBe(true)
    const events = (await bob.req('all', { kinds: [9, 34140] })).events as NostrEvent[]
    expect(events.map((e) => e.content)).toEqual(['open'])
  })
})
