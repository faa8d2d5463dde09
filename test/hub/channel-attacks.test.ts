import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { makeChannelDefinition } from '../../src/events/channel-def.js'
import type { GrantSpec } from '../../src/grants/grant.js'
import { makeRevocation } from '../../src/grants/revocation.js'
import { startHub } from '../../src/hub/server.js'
import { openDatabase } from '../../src/store/db.js'
import { hubMigrations } from '../../src/store/hub-schema.js'
import { initIdentity } from '../../src/identity/keys.js'
import { startTestHub, type TestHub } from '../helpers/hub.js'
import { RawClient } from '../helpers/raw-client.js'
import { newSecret, signTestGrant } from '../helpers/secrets.js'
import { startInProcessNode } from '../helpers/in-process-node.js'

/**
 * Members attacking channels that are not theirs, at a real hub. Everyone was admitted 1000 s
 * ago, so definitions can be dated back into the window a member controls.
 */
const now = () => Math.floor(Date.now() / 1000)
const notAllowed = (channel: string) =>
  `restricted: channel-not-allowed: channel #${channel} is not allowed for this key`

async function publish(c: RawClient, e: NostrEvent) {
  c.send(['EVENT', e])
  return c.ok(e.id)
}

interface Person {
  sk: Uint8Array
  pubkey: string
  grant: NostrEvent
  deviceSk: Uint8Array
}

async function fleet(t: TestHub) {
  const founder = await t.member()
  const admitted = now() - 1000
  const events: NostrEvent[] = []
  const g = async (spec: Omit<GrantSpec, 'fleet' | 'proof'>, sk: Uint8Array) => {
    const e = signTestGrant({ ...spec, fleet: t.owner }, sk, admitted)
    expect((await publish(founder, e))[2]).toBe(true)
    events.push(e)
    return e
  }
  const person = async (name: string, extra: Partial<GrantSpec> = {}): Promise<Person> => {
    const sk = newSecret()
    const deviceSk = newSecret()
    const grant = await g({ subject: publicKeyOf(sk), role: 'owner', name, ...extra }, t.ownerSk)
    await g({ subject: publicKeyOf(deviceSk), role: 'device', parent: grant.id }, sk)
    return { sk, pubkey: publicKeyOf(sk), grant, deviceSk }
  }
  return {
    founder,
    /** Every grant published, in order: what a fresh hub needs first. */
    grants: events,
    bob: await person('bob'),
    carol: await person('carol'),
    /** Dave's grant allows #general only. */
    dave: await person('dave', { channels: ['general'] }),
  }
}

function define(
  t: TestHub,
  sk: Uint8Array,
  spec: { channel: string; creator: string; members?: string[]; private?: boolean },
  createdAt: number,
): NostrEvent {
  return signEvent(
    makeChannelDefinition(
      {
        channel: spec.channel,
        fleet: t.owner,
        creator: spec.creator,
        private: spec.private ?? true,
        members: spec.private === false ? [] : (spec.members ?? []),
      },
      createdAt,
    ),
    sk,
  )
}

const chat = (sk: Uint8Array, channel: string, content: string, at = now()) =>
  signEvent({ kind: 9, created_at: at, tags: [['h', channel]], content }, sk)

async function connectAs(url: string, sk: Uint8Array): Promise<RawClient> {
  const c = await RawClient.connect(url)
  onTestFinished(() => c.close())
  expect((await c.auth(url, sk))[2]).toBe(true)
  return c
}

describe('a member cannot seize a channel in use', () => {
  it('refuses a squatter’s definition dated ahead, and one of a channel others posted in', async () => {
    const t = await startTestHub()
    const f = await fleet(t)
    const carolDev = await connectAs(t.url, f.carol.deviceSk)
    const bobDev = await connectAs(t.url, f.bob.deviceSk)
    expect((await publish(carolDev, chat(f.carol.deviceSk, 'ops', 'deploy at 5')))[2]).toBe(true)

    // Bob's first definition of #ops, private to himself, dated 14 minutes ahead (within what
    // the hub accepts for other events).
    const ahead = define(
      t,
      f.bob.sk,
      { channel: 'ops', creator: f.bob.pubkey, members: [f.bob.pubkey] },
      now() + 840,
    )
    expect((await publish(bobDev, ahead))[3]).toBe(
      'invalid: future-dated: a channel definition may be dated at most 60 s ahead; check the clock',
    )
    const squat = define(
      t,
      f.bob.sk,
      { channel: 'ops', creator: f.bob.pubkey, members: [f.bob.pubkey] },
      now(),
    )
    expect((await publish(bobDev, squat))[3]).toBe(
      'restricted: no-authority: #ops is already in use by others: only the founder or an admin may define it',
    )
    // #ops is still open: Carol posts and Bob reads.
    await bobDev.req('live', { kinds: [9], limit: 0 })
    expect((await publish(carolDev, chat(f.carol.deviceSk, 'ops', 'still open')))[2]).toBe(true)
    await bobDev.next((m) => m[0] === 'EVENT' && (m[2] as NostrEvent).content === 'still open')
    expect(t.hub.channels.isPrivate('ops', now() + 900)).toBe(false)
  })

  it('a plain owner cannot seize a channel the founder uses by back-dating a definition before its first message, at a hub or a node (issue 28, item 7)', async () => {
    const t = await startTestHub()
    const f = await fleet(t)
    const bobDev = await connectAs(t.url, f.bob.deviceSk)
    const founderPost = chat(t.ownerSk, 'deploy', 'deploying 1.4', now() - 500)
    expect((await publish(f.founder, founderPost))[2]).toBe(true)
    // Bob (a plain owner) dates a private #deploy after his admission and before the founder's
    // first message there. Were it to count, the founder's history would be hidden from the
    // founder and the founder's posts refused.
    const squat = define(
      t,
      f.bob.sk,
      { channel: 'deploy', creator: f.bob.pubkey, members: [f.bob.pubkey] },
      now() - 800,
    )
    expect((await publish(bobDev, squat))[3]).toBe(
      'restricted: no-authority: #deploy is already used by people this definition leaves out: only the founder or an admin may define it so',
    )
    expect(t.hub.channels.isPrivate('deploy', now())).toBe(false)
    const again = chat(t.ownerSk, 'deploy', 'deploying 1.5')
    expect((await publish(f.founder, again))[2]).toBe(true)
    const history = (await f.founder.req('h', { '#h': ['deploy'] })).events as NostrEvent[]
    expect(history.map((e) => e.content).sort()).toEqual(['deploying 1.4', 'deploying 1.5'])
    // Listing everyone who posted there does not hide them: that one is taken.
    const listing = define(
      t,
      f.bob.sk,
      { channel: 'deploy', creator: f.bob.pubkey, members: [f.bob.pubkey, t.owner] },
      now() - 800,
    )
    expect((await publish(bobDev, listing))[2]).toBe(true)
    expect(t.hub.channels.isMember(t.owner, 'deploy', now())).toBe(true)
    // Dropping the founder again is refused, as is any plain definition that leaves out a poster.
    const drop = define(
      t,
      f.bob.sk,
      { channel: 'deploy', creator: f.bob.pubkey, members: [f.bob.pubkey] },
      now(),
    )
    expect((await publish(bobDev, drop))[3]).toMatch(
      /already used by people this definition leaves out/,
    )
    expect((await publish(f.founder, chat(t.ownerSk, 'deploy', 'still mine')))[2]).toBe(true)

    // The founder's node, which holds its message, handed the squat (as a hostile or stale hub
    // could hand it) decides the same: the squat does not count there either.
    const home = join(t.dir, 'node')
    initIdentity({ home, name: 'desk', ownerSecret: t.ownerSk })
    const node = await startInProcessNode({ home, embedPort: 0, verifyWorkers: 0 })
    await node.intake([...f.grants, founderPost])
    await node.intake([squat])
    expect(node.book.state.channels.isPrivate('deploy', now())).toBe(false)
    expect(node.book.state.channels.isMember(t.owner, 'deploy', now())).toBe(true)
    expect(node.history({ channel: 'deploy', limit: 10 }).map((i) => i.event.content)).toEqual([
      'deploying 1.4',
    ])
  })

  it('refuses a non-member with the same words as a key whose grant excludes the channel', async () => {
    const t = await startTestHub()
    const f = await fleet(t)
    const secret = define(
      t,
      f.carol.sk,
      { channel: 'secret', creator: f.carol.pubkey, members: [f.carol.pubkey] },
      now(),
    )
    expect((await publish(f.founder, secret))[2]).toBe(true)
    const bobDev = await connectAs(t.url, f.bob.deviceSk)
    const daveDev = await connectAs(t.url, f.dave.deviceSk)
    const byBob = await publish(bobDev, chat(f.bob.deviceSk, 'secret', 'hi'))
    const byDave = await publish(daveDev, chat(f.dave.deviceSk, 'secret', 'hi'))
    expect(byBob[3]).toBe(notAllowed('secret'))
    expect(byBob[3]).toBe(byDave[3])
    // Defining it: Bob may neither see nor change #secret; Dave's grant excludes it.
    const bobDef = define(
      t,
      f.bob.sk,
      { channel: 'secret', creator: f.carol.pubkey, members: [f.bob.pubkey] },
      now() + 1,
    )
    const daveDef = define(
      t,
      f.dave.sk,
      { channel: 'secret', creator: f.dave.pubkey, members: [f.dave.pubkey] },
      now() + 1,
    )
    expect((await publish(bobDev, bobDef))[3]).toBe(notAllowed('secret'))
    expect((await publish(daveDev, daveDef))[3]).toBe(notAllowed('secret'))
  })
})

describe('a private channel never falls open', () => {
  it('stays private on a fresh hub after its creator is removed', async () => {
    const t = await startTestHub()
    const f = await fleet(t)
    const created = define(
      t,
      f.bob.sk,
      { channel: 'secret', creator: f.bob.pubkey, members: [f.bob.pubkey, f.carol.pubkey] },
      now() - 100,
    )
    expect((await publish(f.founder, created))[2]).toBe(true)
    // The founder removes Bob and re-signs his channel as it is (what kith fleet remove does).
    const at = now()
    const removal = signEvent(
      makeRevocation({ fleet: t.owner, keys: [f.bob.pubkey] }, at),
      t.ownerSk,
    )
    expect((await publish(f.founder, removal))[2]).toBe(true)
    const resign = define(
      t,
      t.ownerSk,
      { channel: 'secret', creator: f.bob.pubkey, members: [f.bob.pubkey, f.carol.pubkey] },
      at,
    )
    expect((await publish(f.founder, resign))[2]).toBe(true)

    // A fresh hub of the same fleet is sent what the members' nodes hold.
    const dir = join(t.dir, 'fresh')
    const { mkdirSync } = await import('node:fs')
    mkdirSync(dir)
    const fresh = await startHub({
      port: 0,
      dbPath: join(dir, 'hub.db'),
      founder: t.owner,
      verifyWorkers: 0,
    })
    onTestFinished(() => fresh.close())
    const founder = await connectAs(fresh.url, t.ownerSk)
    for (const g of f.grants) expect((await publish(founder, g))[2]).toBe(true)
    expect((await publish(founder, removal))[2]).toBe(true)
    await publish(founder, created)
    expect((await publish(founder, resign))[2]).toBe(true)
    expect(fresh.channels.isPrivate('secret', now())).toBe(true)
    const daveDev = await connectAs(fresh.url, f.dave.deviceSk)
    const carolDev = await connectAs(fresh.url, f.carol.deviceSk)
    expect((await publish(carolDev, chat(f.carol.deviceSk, 'secret', 'still ours')))[2]).toBe(true)
    expect((await daveDev.req('s', { kinds: [9] })).events).toEqual([])
    expect(
      ((await carolDev.req('s', { kinds: [9] })).events as NostrEvent[]).map((e) => e.content),
    ).toEqual(['still ours'])
  })

  it('keeps every version of a definition across a restart, so the first one still counts', async () => {
    const t = await startTestHub()
    const f = await fleet(t)
    const bobDev = await connectAs(t.url, f.bob.deviceSk)
    const carolDev = await connectAs(t.url, f.carol.deviceSk)
    // Bob creates #ops with Carol in it; Carol posts; Bob then rewords it (a newer version of
    // the same address, which replaces the first one for readers).
    const v1 = define(
      t,
      f.bob.sk,
      { channel: 'ops', creator: f.bob.pubkey, members: [f.bob.pubkey, f.carol.pubkey] },
      now() - 100,
    )
    expect((await publish(bobDev, v1))[2]).toBe(true)
    expect((await publish(carolDev, chat(f.carol.deviceSk, 'ops', 'hello', now() - 50)))[2]).toBe(
      true,
    )
    const v2 = signEvent(
      makeChannelDefinition(
        {
          channel: 'ops',
          fleet: t.owner,
          creator: f.bob.pubkey,
          private: true,
          members: [f.bob.pubkey, f.carol.pubkey],
          about: 'deploys',
        },
        now(),
      ),
      f.bob.sk,
    )
    expect((await publish(bobDev, v2))[2]).toBe(true)
    await t.hub.close()

    // Restarted, the hub still knows Bob defined #ops before Carol posted in it: v2 (dated after
    // her message) is in effect, and #ops is still private.
    const hub = await startHub({
      port: 0,
      dbPath: join(t.dir, 'hub.db'),
      founder: t.owner,
      verifyWorkers: 0,
    })
    onTestFinished(() => hub.close())
    expect(hub.channels.definition('ops', now())?.id).toBe(v2.id)
    expect(hub.channels.isPrivate('ops', now())).toBe(true)
    const outsider = newSecret()
    expect(hub.channels.isMember(publicKeyOf(outsider), 'ops', now())).toBe(false)
    const carol = await connectAs(hub.url, f.carol.deviceSk)
    expect((await carol.req('q', { kinds: [9] })).events.length).toBe(1)
    await hub.close()

    // A hub.db from before versions were kept has only v2. Upgraded, it takes what it held for
    // admitted (v2 is not asked whether #ops was in use before it): #ops does not fall open.
    const db = openDatabase(join(t.dir, 'hub.db'), hubMigrations)
    db.exec('DROP TABLE kept_versions; DROP TABLE key_usage; PRAGMA user_version = 1')
    db.close()
    const upgraded = await startHub({
      port: 0,
      dbPath: join(t.dir, 'hub.db'),
      founder: t.owner,
      verifyWorkers: 0,
    })
    onTestFinished(() => upgraded.close())
    expect(upgraded.store.legacyVersionIds(34140)).toEqual([v2.id])
    expect(upgraded.channels.definition('ops', now())?.id).toBe(v2.id)
    expect(upgraded.channels.isPrivate('ops', now())).toBe(true)
  })
})
