import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { bytesToHex } from '@noble/hashes/utils.js'
import { npubEncode } from 'nostr-tools/nip19'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { signGrant } from '../../src/grants/grant.js'
import { makeChannelDefinition } from '../../src/events/channel-def.js'
import { RawClient } from '../helpers/raw-client.js'
import { runKith, setupKith, startHubProcess, startNodeProcess } from '../helpers/cli.js'
import { tempDir } from '../helpers/tmp.js'
import { newSecret, signTestGrant } from '../helpers/secrets.js'

const now = () => Math.floor(Date.now() / 1000)

/** A raw client authenticated as `sk`, closed at the end. */
async function client(url: string, sk: Uint8Array, close: RawClient[]): Promise<RawClient> {
  const c = await RawClient.connect(url)
  close.push(c)
  expect((await c.auth(url, sk))[2]).toBe(true)
  return c
}

async function publish(c: RawClient, e: NostrEvent) {
  c.send(['EVENT', e])
  return c.ok(e.id)
}

describe('kith channel', () => {
  it('creates a private channel that the hub then keeps from non-members', async () => {
    const root = tempDir()
    const laptop = join(root, 'laptop')
    const founderSk = newSecret()
    const founder = publicKeyOf(founderSk)
    expect(
      (
        await setupKith(['init', '--name', 'laptop', '--owner-key-stdin'], {
          home: laptop,
          input: bytesToHex(founderSk),
        })
      ).code,
    ).toBe(0)
    const hub = await startHubProcess(['--db', join(root, 'hub.db')], laptop)
    expect((await setupKith(['hub', 'add', hub.url], { home: laptop })).code).toBe(0)

    // Two more people, Bob and Carol, each with a device, admitted by the founder.
    const clients: RawClient[] = []
    try {
      const admin = await client(hub.url, founderSk, clients)
      const person = async (name: string) => {
        const sk = newSecret()
        const deviceSk = newSecret()
        const g = signGrant(
          { subject: publicKeyOf(sk), role: 'owner', fleet: founder, name },
          founderSk,
          sk,
          now(),
        )
        const d = signGrant(
          { subject: publicKeyOf(deviceSk), role: 'device', fleet: founder, parent: g.id },
          sk,
          deviceSk,
          now(),
        )
        expect((await publish(admin, g))[2]).toBe(true)
        expect((await publish(admin, d))[2]).toBe(true)
        return { npub: npubEncode(publicKeyOf(sk)), deviceSk, device: publicKeyOf(deviceSk) }
      }
      const bob = await person('bob')
      const carol = await person('carol')

      const created = await runKith(
        ['channel', 'create', '#secret', '--private', '--members', bob.npub, '--json'],
        { home: laptop },
      )
      expect(created.stderr).toBe('')
      expect(created.code).toBe(0)
      const out = JSON.parse(created.stdout) as {
        channel: string
        private: boolean
        members: { npub: string; name: string }[]
        hubs: { url: string; ok: boolean }[]
      }
      expect(out).toMatchObject({ channel: 'secret', private: true })
      expect(out.members.map((m) => m.name)).toEqual(['founder', 'bob'])
      expect(out.hubs).toEqual([expect.objectContaining({ url: hub.url, ok: true })])

      // At the hub: Bob's device reads and posts; Carol's device sees neither, and is refused.
      const bobDev = await client(hub.url, bob.deviceSk, clients)
      const carolDev = await client(hub.url, carol.deviceSk, clients)
      expect((await bobDev.req('d', { kinds: [34140] })).events).toHaveLength(1)
      const post = signEvent(
        { kind: 9, created_at: now(), tags: [['h', 'secret']], content: 'psst' },
        bob.deviceSk,
      )
      expect((await publish(bobDev, post))[2]).toBe(true)
      expect((await carolDev.req('d', { kinds: [34140, 9] })).events).toEqual([])
      const intrude = signEvent(
        { kind: 9, created_at: now(), tags: [['h', 'secret']], content: 'hi?' },
        carol.deviceSk,
      )
      expect((await publish(carolDev, intrude))[3]).toBe(
        'restricted: channel-not-allowed: channel #secret is not allowed for this key',
      )

      const listed = await runKith(['channel', 'list', '--json'], { home: laptop })
      expect(JSON.parse(listed.stdout)).toEqual({
        channels: [expect.objectContaining({ channel: 'secret', private: true })],
      })
      const members = await runKith(['channel', 'members', '#secret'], { home: laptop })
      expect(members.stdout).toMatch(/owner bob npub1/)
      expect((await runKith(['channel', 'members', '#general'], { home: laptop })).stdout).toMatch(
        /#general has no definition visible to you: it is open to the whole fleet/,
      )

      // Replacing the member list takes Bob off at once.
      const replaced = await runKith(['channel', 'create', '#secret', '--private'], {
        home: laptop,
      })
      expect(replaced.code).toBe(0)
      expect(replaced.stdout).toMatch(/#secret is private: 1 member/)
      expect((await bobDev.req('again', { kinds: [9] })).events).toEqual([])

      // A device is not a person: members are owner keys.
      const device = await runKith(
        ['channel', 'create', '#x', '--private', '--members', npubEncode(bob.device)],
        { home: laptop },
      )
      expect(device.stderr).toMatch(/is not a person of this fleet/)
      expect(device.code).toBe(2)
    } finally {
      for (const c of clients) c.close()
    }
  })

  it('answers bad input with stable exit codes and messages that name the fix', async () => {
    const home = join(tempDir(), 'laptop')
    await setupKith(['init', '--name', 'laptop'], { home })
    const bad = async (args: string[], code: number, message: RegExp) => {
      const r = await runKith(['channel', ...args], { home })
      expect(r.stderr).toMatch(message)
      expect(r.code).toBe(code)
    }
    const someone = npubEncode(publicKeyOf(newSecret()))
    await bad(['create', '#Not Valid'], 2, /not a channel name/)
    await bad(['create', '#x', '--members', someone], 2, /add --private/)
    await bad(['create', '#x', '--private', '--members', 'npub1nope'], 1, /not a valid npub/)
    await bad(
      ['create', '#x', '--creator', someone],
      2,
      /--open and --creator belong to kith channel set/,
    )
    await bad(['set', '#x', '--open', '--private'], 2, /contradict each other/)
    await bad(['list', '#x'], 2, /takes no arguments/)
    await bad(['rename'], 2, /unknown channel command/)
    expect((await runKith(['channel', '--help'], { home })).stdout).toMatch(
      /--creator, for the founder and\nadmins, names the person/,
    )
  })

  it('publishes through the running node to its embedded hub, which then keeps the channel private', async () => {
    const laptop = join(tempDir(), 'laptop')
    const founderSk = newSecret()
    const founder = publicKeyOf(founderSk)
    await setupKith(['init', '--name', 'laptop', '--owner-key-stdin'], {
      home: laptop,
      input: bytesToHex(founderSk),
    })
    // A plain fleet: the raw clients below read what the hub relays.
    expect((await runKith(['fleet', 'encrypt', 'off'], { home: laptop })).code).toBe(0)
    const node = await startNodeProcess(laptop, ['--port', '0'])
    const ready = JSON.parse(await node.waitFor(/"event":"ready"/)) as { embedded: string }
    const url = ready.embedded
    const clients: RawClient[] = []
    try {
      const admin = await client(url, founderSk, clients)
      const bobSk = newSecret()
      const bobGrant = signGrant(
        { subject: publicKeyOf(bobSk), role: 'owner', fleet: founder, name: 'bob' },
        founderSk,
        bobSk,
        now(),
      )
      expect((await publish(admin, bobGrant))[2]).toBe(true)
      const created = await runKith(
        ['channel', 'create', '#secret', '--private', '--members', npubEncode(publicKeyOf(bobSk))],
        { home: laptop },
      )
      expect(created.stdout).toMatch(new RegExp(`${url}: accepted`))
      expect(created.code).toBe(0)

      const bob = await client(url, bobSk, clients)
      const outsiderSk = newSecret()
      const outsiderGrant = signGrant(
        { subject: publicKeyOf(outsiderSk), role: 'owner', fleet: founder },
        founderSk,
        outsiderSk,
        now(),
      )
      expect((await publish(admin, outsiderGrant))[2]).toBe(true)
      const outsider = await client(url, outsiderSk, clients)
      await bob.req('live', { kinds: [9], limit: 0 })
      await outsider.req('live', { kinds: [9], limit: 0 })

      const sent = await runKith(['send', '#secret', 'for bob only'], { home: laptop })
      expect(sent.stdout).toMatch(/sent .* to #secret/)
      expect((await runKith(['send', '#general', 'for all'], { home: laptop })).code).toBe(0)
      const content = (f: unknown[]) => f[0] === 'EVENT' && (f[2] as NostrEvent).content
      await bob.next((f) => content(f) === 'for bob only')
      await outsider.next((f) => content(f) === 'for all')
      expect(outsider.frames.filter((f) => content(f) === 'for bob only')).toEqual([])
    } finally {
      for (const c of clients) c.close()
    }
  })

  it('repairs a squatted channel with set --creator, and re-signs a removed person’s channels', async () => {
    const root = tempDir()
    const laptop = join(root, 'laptop')
    const founderSk = newSecret()
    const founder = publicKeyOf(founderSk)
    await setupKith(['init', '--name', 'laptop', '--owner-key-stdin'], {
      home: laptop,
      input: bytesToHex(founderSk),
    })
    const hub = await startHubProcess(['--db', join(root, 'hub.db')], laptop)
    expect((await setupKith(['hub', 'add', hub.url], { home: laptop })).code).toBe(0)
    const clients: RawClient[] = []
    try {
      const admin = await client(hub.url, founderSk, clients)
      // Bob and Carol were admitted 1000 s ago, each with a device.
      const person = async (name: string) => {
        const sk = newSecret()
        const deviceSk = newSecret()
        const g = signTestGrant(
          { subject: publicKeyOf(sk), role: 'owner', fleet: founder, name },
          founderSk,
          now() - 1000,
        )
        const d = signTestGrant(
          { subject: publicKeyOf(deviceSk), role: 'device', fleet: founder, parent: g.id },
          sk,
          now() - 1000,
        )
        expect((await publish(admin, g))[2]).toBe(true)
        expect((await publish(admin, d))[2]).toBe(true)
        return {
          sk,
          pubkey: publicKeyOf(sk),
          deviceSk,
          dev: await client(hub.url, deviceSk, clients),
        }
      }
      const bob = await person('bob')
      const carol = await person('carol')
      const post = (p: typeof bob, channel: string, content: string, at = now()) =>
        publish(
          p.dev,
          signEvent({ kind: 9, created_at: at, tags: [['h', channel]], content }, p.deviceSk),
        )
      const define = (p: typeof bob, channel: string, members: string[], at: number) =>
        signEvent(
          makeChannelDefinition(
            { channel, fleet: founder, creator: p.pubkey, private: true, members },
            at,
          ),
          p.sk,
        )
      expect((await post(carol, 'ops', 'first', now() - 500))[2]).toBe(true)
      // Bob back-dates a private #ops to before Carol's first message: refused, since it leaves
      // out someone who posted there (only the founder or an admin may), and Carol stays in.
      const squat = await publish(bob.dev, define(bob, 'ops', [bob.pubkey], now() - 800))
      expect(squat[2]).toBe(false)
      expect(squat[3]).toMatch(/already used by people this definition leaves out/)
      expect((await post(carol, 'ops', 'still in'))[2]).toBe(true)

      // The founder opens it again and names Carol its creator.
      const repaired = await runKith(
        ['channel', 'set', '#ops', '--open', '--creator', 'carol', '--json'],
        { home: laptop },
      )
      expect(repaired.stderr).toBe('')
      expect(repaired.code).toBe(0)
      expect(JSON.parse(repaired.stdout)).toMatchObject({
        channel: 'ops',
        private: false,
        creator: npubEncode(carol.pubkey),
        hubs: [expect.objectContaining({ url: hub.url, ok: true })],
      })
      expect((await post(carol, 'ops', 'back in'))[2]).toBe(true)
      const bad = await runKith(['channel', 'set', '#ops', '--creator', 'nobody'], { home: laptop })
      expect(bad.stderr).toMatch(/no person named nobody/)
      expect(bad.code).toBe(2)

      // Bob creates a private #secret with Carol; then the founder removes Bob.
      expect(
        (await publish(bob.dev, define(bob, 'secret', [bob.pubkey, carol.pubkey], now() - 100)))[2],
      ).toBe(true)
      const removed = await runKith(['fleet', 'remove', 'bob', '--yes'], { home: laptop })
      expect(removed.code, removed.stderr).toBe(0)
      expect(removed.stdout).toMatch(/^re-signed #secret so it stays as it is/m)
      expect(removed.stdout).not.toMatch(/re-signed #ops/)
      // The hub now has the founder's re-sign in effect: #secret stays private, with Carol in it.
      const defs = (await carol.dev.req('d', { kinds: [34140], '#d': ['secret'] }))
        .events as NostrEvent[]
      const resign = defs.find((e) => e.pubkey === founder)
      expect(resign?.tags).toEqual([
        ['d', 'secret'],
        ['fleet', founder],
        ['creator', bob.pubkey],
        ['private'],
        ['p', bob.pubkey],
        ['p', carol.pubkey],
      ])
      expect((await post(carol, 'secret', 'still private'))[2]).toBe(true)
    } finally {
      for (const c of clients) c.close()
    }
  })

  it('refuses to define a channel without the owner key', async () => {
    const home = join(tempDir(), 'h')
    // A device-only machine: init with a fleet but no owner key is what kith join makes; an
    // owner-less config is simplest to get from init and then removing the owner key file.
    await setupKith(['init'], { home })
    const { rmSync } = await import('node:fs')
    rmSync(join(home, 'owner.key'), { force: true })
    const r = await runKith(['channel', 'create', '#ops', '--private'], { home })
    expect(r.stderr).toMatch(/owner key/)
    expect(r.code).toBe(1)
  })
})
