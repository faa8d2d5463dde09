import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { bytesToHex } from '@noble/hashes/utils.js'
import { npubEncode } from 'nostr-tools/nip19'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { signGrant } from '../../src/grants/grant.js'
import { RawClient } from '../helpers/raw-client.js'
import { runKith, startHubProcess, startNodeProcess } from '../helpers/cli.js'
import { tempDir } from '../helpers/tmp.js'

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
    const founderSk = generateSecretKey()
    const founder = publicKeyOf(founderSk)
    expect(
      (
        await runKith(['init', '--name', 'laptop', '--owner-key-stdin'], {
          home: laptop,
          input: bytesToHex(founderSk),
        })
      ).code,
    ).toBe(0)
    const hub = await startHubProcess(['--db', join(root, 'hub.db')], laptop)
    expect((await runKith(['hub', 'add', hub.url], { home: laptop })).code).toBe(0)

    // Two more people, Bob and Carol, each with a device, admitted by the founder.
    const clients: RawClient[] = []
    try {
      const admin = await client(hub.url, founderSk, clients)
      const person = async (name: string) => {
        const sk = generateSecretKey()
        const deviceSk = generateSecretKey()
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
      expect((await publish(carolDev, intrude))[3]).toMatch(/^restricted: not-a-channel-member/)

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

      // Bad input: stable exit codes and messages that name the fix.
      const bad = async (args: string[], code: number, message: RegExp) => {
        const r = await runKith(['channel', ...args], { home: laptop })
        expect(r.stderr).toMatch(message)
        expect(r.code).toBe(code)
      }
      await bad(['create', '#Not Valid'], 2, /not a channel name/)
      await bad(['create', '#x', '--members', bob.npub], 2, /add --private/)
      await bad(['create', '#x', '--private', '--members', 'npub1nope'], 1, /not a valid npub/)
      await bad(
        ['create', '#x', '--private', '--members', npubEncode(bob.device)],
        2,
        /is not a person of this fleet/,
      )
      await bad(['list', '#x'], 2, /takes no arguments/)
      await bad(['rename'], 2, /unknown channel command/)
      expect((await runKith(['channel', '--help'], { home: laptop })).stdout).toMatch(
        /create --private makes one whose messages/,
      )
    } finally {
      for (const c of clients) c.close()
    }
  })

  it('publishes through the running node to its embedded hub, which then keeps the channel private', async () => {
    const laptop = join(tempDir(), 'laptop')
    const founderSk = generateSecretKey()
    const founder = publicKeyOf(founderSk)
    await runKith(['init', '--name', 'laptop', '--owner-key-stdin'], {
      home: laptop,
      input: bytesToHex(founderSk),
    })
    const node = await startNodeProcess(laptop, ['--port', '0'])
    const ready = JSON.parse(await node.waitFor(/"event":"ready"/)) as { embedded: string }
    const url = ready.embedded
    const clients: RawClient[] = []
    try {
      const admin = await client(url, founderSk, clients)
      const bobSk = generateSecretKey()
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
      const outsiderSk = generateSecretKey()
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

  it('refuses to define a channel without the owner key', async () => {
    const home = join(tempDir(), 'h')
    // A device-only machine: init with a fleet but no owner key is what kith join makes; an
    // owner-less config is simplest to get from init and then removing the owner key file.
    await runKith(['init'], { home })
    const { rmSync } = await import('node:fs')
    rmSync(join(home, 'owner.key'), { force: true })
    const r = await runKith(['channel', 'create', '#ops', '--private'], { home })
    expect(r.stderr).toMatch(/owner key/)
    expect(r.code).toBe(1)
  })
})
