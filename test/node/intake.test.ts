import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf, signEvent } from '../../src/events/event.js'
import { makeChannelDefinition } from '../../src/events/channel-def.js'
import { signGrant } from '../../src/grants/grant.js'
import { makeRevocation } from '../../src/grants/revocation.js'
import { readConfig, writeConfig } from '../../src/identity/config.js'
import { initIdentity, loadIdentity } from '../../src/identity/keys.js'
import type { KithError } from '../../src/errors.js'
import { KithNode } from '../../src/node/kith-node.js'
import { GrantBook } from '../../src/node/grant-book.js'
import { startTestHub } from '../helpers/hub.js'
import { tempDir } from '../helpers/tmp.js'
import { startInProcessNode } from '../helpers/in-process-node.js'

const now = () => Math.floor(Date.now() / 1000)

async function startNode(home: string): Promise<KithNode> {
  return startInProcessNode({ home, embedPort: 0, verifyWorkers: 0 })
}

describe('a node takes only what the grant chains allow', () => {
  it('refuses events from revoked keys, forged events and strangers, as the hub does', async () => {
    const home = join(tempDir(), 'home')
    const ownerSk = generateSecretKey()
    initIdentity({ home, ownerSecret: ownerSk })
    const node = await startNode(home)
    const agentSk = generateSecretKey()
    const grant = signGrant(
      {
        subject: publicKeyOf(agentSk),
        role: 'agent',
        fleet: publicKeyOf(ownerSk),
        name: 'claude',
      },
      ownerSk,
      agentSk,
      now(),
    )
    const msg = (text: string, sk = agentSk) =>
      signEvent({ kind: 9, created_at: now(), tags: [['h', 'ops']], content: text }, sk)
    const seen: string[] = []
    node.onChat((item) => seen.push(item.event.content))

    const first = msg('agent speaking')
    await node.intake([first, grant]) // grants are taken first, whatever the order
    expect(seen).toEqual(['agent speaking'])
    expect(node.names.who(publicKeyOf(agentSk))).toMatchObject({ name: 'claude', role: 'agent' })

    const forged = { ...msg('forged'), sig: first.sig }
    await node.intake([forged, msg('stranger', generateSecretKey())])
    const revocation = signEvent(
      makeRevocation({ fleet: publicKeyOf(ownerSk), keys: [publicKeyOf(agentSk)] }, now()),
      ownerSk,
    )
    await node.intake([revocation])
    await node.intake([msg('after revocation')])
    // A replay of what it already has is not shown twice.
    await node.intake([first])
    expect(seen).toEqual(['agent speaking'])
    expect(node.history({ channel: 'ops' }).map((i) => i.event.content)).toEqual(['agent speaking'])
  })

  it('shows a hub refusal to the sender and keeps it, never dropping it silently', async () => {
    const t = await startTestHub()
    const home = join(tempDir(), 'devbox')
    initIdentity({ home, name: 'devbox' })
    const config = readConfig(home)!
    const { devicePubkey, deviceSecret } = loadIdentity(home)
    // The owner grants this device #ops only; the device joins the owner's fleet.
    writeConfig(home, { ...config, owner: t.owner, fleet: t.owner, hubs: [t.url] })
    const book = GrantBook.open(home, t.owner)
    book.learn([
      signGrant(
        { subject: devicePubkey, role: 'device', fleet: t.owner, channels: ['ops'] },
        t.ownerSk,
        deviceSecret,
        now(),
      ),
    ])
    book.close()
    const node = await startNode(home)
    await expect.poll(() => node.links[0]?.state, { timeout: 10_000 }).toBe('live')
    const ok = await node.sendChat({ channel: 'ops', text: 'allowed' })
    expect(ok.deliveries).toEqual([{ hub: t.url, ok: true, message: '' }])
    const refused = await node.sendChat({ channel: 'dev', text: 'not allowed here' })
    expect(refused.deliveries).toEqual([
      {
        hub: t.url,
        ok: false,
        message: expect.stringMatching(/^restricted: channel-not-allowed/) as string,
      },
    ])
    expect(node.status().refused).toEqual([
      {
        event: refused.event.id,
        hub: t.url,
        message: expect.stringMatching(/channel-not-allowed/) as string,
      },
    ])
    expect(node.status().outbox).toBe(0)
  })
})

describe('sending', () => {
  it('keeps the same text sent twice within a second as two messages (two prompts)', async () => {
    const home = join(tempDir(), 'home')
    initIdentity({ home, ownerSecret: generateSecretKey() })
    const node = await startNode(home)
    const first = (await node.sendChat({ channel: 'ops', text: 'run the tests' })).event
    const second = (await node.sendChat({ channel: 'ops', text: 'run the tests' })).event
    expect(second.id).not.toBe(first.id)
    expect(second.created_at).toBeGreaterThan(first.created_at)
    const stored = node
      .history({ channel: 'ops', limit: 10 })
      .filter((i) => i.event.content === 'run the tests')
    expect(stored).toHaveLength(2)
  })
})

describe('private channels at the node', () => {
  it('takes a private channel’s events only from its members, and will not post into it otherwise', async () => {
    const aliceSk = generateSecretKey()
    const alice = publicKeyOf(aliceSk)
    const home = join(tempDir(), 'alice')
    initIdentity({ home, ownerSecret: aliceSk })
    const node = await startNode(home)
    const bobSk = generateSecretKey()
    const bobDevSk = generateSecretKey()
    const bobGrant = signGrant(
      { subject: publicKeyOf(bobSk), role: 'owner', fleet: alice, name: 'bob' },
      aliceSk,
      bobSk,
      now(),
    )
    const bobDevice = signGrant(
      {
        subject: publicKeyOf(bobDevSk),
        role: 'device',
        fleet: alice,
        parent: bobGrant.id,
        name: 'bob-laptop',
      },
      bobSk,
      bobDevSk,
      now(),
    )
    const secret = signEvent(
      makeChannelDefinition(
        { channel: 'secret', fleet: alice, creator: alice, private: true, members: [alice] },
        now(),
      ),
      aliceSk,
    )
    const msg = (channel: string, text: string) =>
      signEvent({ kind: 9, created_at: now(), tags: [['h', channel]], content: text }, bobDevSk)
    const seen: string[] = []
    node.onChat((item) => seen.push(item.event.content))
    // As a plain relay would hand them over: a non-member's post in the private channel.
    await node.intake([
      bobGrant,
      bobDevice,
      secret,
      msg('secret', 'bob sneaks in'),
      msg('ops', 'bob in ops'),
    ])
    expect(seen).toEqual(['bob in ops'])
    // A node whose person is not a member refuses to post there, and says why.
    const bobHome = join(tempDir(), 'bob')
    initIdentity({ home: bobHome, ownerSecret: bobSk })
    writeConfig(bobHome, { ...readConfig(bobHome)!, fleet: alice })
    const book = GrantBook.open(bobHome, alice)
    book.learn([bobGrant, secret])
    book.close()
    const bobNode = await startNode(bobHome)
    await bobNode.intake([secret])
    const refused = await bobNode.sendChat({ channel: 'secret', text: 'hi' }).then(
      () => undefined,
      (err: unknown) => err as KithError,
    )
    expect(refused?.code).toBe('restricted')
    expect(refused?.message).toMatch(/#secret is private and you are not a member/)
  })
})
