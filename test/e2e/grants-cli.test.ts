import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { bytesToHex } from '@noble/hashes/utils.js'
import { decode, npubEncode } from 'nostr-tools/nip19'
import { publicKeyOf, signEvent } from '../../src/events/event.js'
import { authTagFor, checkAuthTag } from '../../src/grants/nip-oa.js'
import { authTagsOf, listAgentRecords, readAgentSecret } from '../../src/identity/agents.js'
import { RawClient } from '../helpers/raw-client.js'
import { freePort, runKith, setupKith, startHubProcess, startNodeProcess } from '../helpers/cli.js'
import { tempDir } from '../helpers/tmp.js'

const hexOf = (npub: string) => decode(npub).data as string

describe('grants through the CLI against a running hub', () => {
  it(
    'init grants the device, agent add publishes, agent revoke drops the live agent',
    { timeout: 90_000 },
    async () => {
      const root = tempDir()
      const laptop = join(root, 'laptop')
      const ownerSk = generateSecretKey()
      const init = await setupKith(['init', '--name', 'laptop', '--owner-key-stdin', '--json'], {
        home: laptop,
        input: bytesToHex(ownerSk),
      })
      expect(init.code).toBe(0)
      expect((JSON.parse(init.stdout) as { deviceGrant: string }).deviceGrant).toMatch(
        /^[0-9a-f]{64}$/,
      )

      const hub = await startHubProcess(['--db', join(root, 'hub.db')], laptop)
      const add = await setupKith(['hub', 'add', hub.url], { home: laptop })
      expect(add.stdout).toMatch(/published 1, learned 0/)

      // A second machine of the same person (same owner key) joins the same fleet.
      const desktop = join(root, 'desktop')
      await setupKith(['init', '--name', 'desktop', '--owner-key-stdin'], {
        home: desktop,
        input: bytesToHex(ownerSk),
      })
      await setupKith(['hub', 'add', hub.url], { home: desktop })
      const devices = await runKith(['device', 'list', '--json'], { home: laptop })
      const list = JSON.parse(devices.stdout) as {
        devices: { name: string; status: string; thisDevice: boolean }[]
      }
      expect(list.devices.map((d) => [d.name, d.status, d.thisDevice]).sort()).toEqual([
        ['desktop', 'active', false],
        ['laptop', 'active', true],
      ])

      const added = await setupKith(['agent', 'add', 'claude', '--kinds', '9', '--json'], {
        home: laptop,
      })
      expect(added.code).toBe(0)
      const agent = JSON.parse(added.stdout) as {
        agent: string
        hubs: { ok: boolean; published: number }[]
      }
      expect(agent.hubs).toEqual([expect.objectContaining({ ok: true, published: 1 })])
      const agentSk = readAgentSecret(laptop, 'claude')!
      expect(bytesToHex(agentSk)).not.toBe('')

      // NIP-OA: one attestation per allowed kind, each bounded by the grant's expiry; every event
      // the agent may publish carries the one that holds for it (an "any of" tag holds for none).
      const helper = await runKith(
        ['agent', 'add', 'helper', '--kinds', '9,4142', '--expires', '1h', '--json'],
        { home: laptop },
      )
      expect(helper.code, helper.stderr).toBe(0)
      const record = listAgentRecords(laptop).find((r) => r.name === 'helper')!
      const exp = /created_at<(\d+)$/.exec(record.authTags![0]![2]!)![1]
      expect(record.authTags!.map((t) => t[2])).toEqual([
        `kind=9&created_at<${exp}`,
        `kind=4142&created_at<${exp}`,
      ])
      const helperSk = readAgentSecret(laptop, 'helper')!
      for (const kind of [9, 4142]) {
        const created_at = Math.floor(Date.now() / 1000)
        const auth = authTagFor(authTagsOf(record), { kind, created_at })!
        const event = signEvent({ kind, created_at, tags: [auth], content: 'x' }, helperSk)
        expect(checkAuthTag(event)).toEqual({ ok: true, owner: publicKeyOf(ownerSk) })
      }
      expect(authTagFor(authTagsOf(record), { kind: 1, created_at: Number(exp) - 10 })).toBe(
        undefined,
      )

      // The hub admits the agent for kind 9 only, as its grant says.
      const live = await RawClient.connect(hub.url)
      expect((await live.auth(hub.url, agentSk))[2]).toBe(true)
      expect((await live.req('chat', { kinds: [9] })).end[0]).toBe('EOSE')

      const revoked = await runKith(['agent', 'revoke', 'claude', '--yes'], { home: laptop })
      expect(revoked.code).toBe(0)
      expect(revoked.stdout).toMatch(/revoked agent claude npub1/)
      expect(revoked.stdout).toMatch(/published 1/)
      expect((await live.next((f) => f[0] === 'CLOSED'))[2]).toMatch(/^restricted: revoked/)
      expect((await live.waitClosed()).code).toBe(1008)
      const listed = JSON.parse(
        (await runKith(['agent', 'list', '--json', '--all'], { home: laptop })).stdout,
      ) as {
        agents: { name: string; status: string }[]
      }
      expect(listed.agents.map((a) => [a.name, a.status]).sort()).toEqual([
        ['claude', 'revoked'],
        ['helper', 'active'],
      ])

      // Revoking the desktop device from the laptop (owner key) cascades nothing and drops it.
      const desktopId = JSON.parse(
        (await runKith(['whoami', '--json'], { home: desktop })).stdout,
      ) as { deviceHex: string }
      const dev = await runKith(['device', 'revoke', 'desktop', '--yes'], { home: laptop })
      expect(dev.stdout).toMatch(/revoked device desktop/)
      const fromLaptop = JSON.parse(
        (await runKith(['device', 'list', '--json', '--all'], { home: laptop })).stdout,
      ) as { devices: { npub: string; status: string }[] }
      expect(fromLaptop.devices.find((d) => hexOf(d.npub) === desktopId.deviceHex)?.status).toBe(
        'revoked',
      )
      // The desktop itself is shut out: the hub refuses its AUTH, and it says so.
      const sync = await setupKith(['agent', 'add', 'late'], { home: desktop })
      expect(sync.stdout).toMatch(/not reached \(hub refused this device: restricted: revoked/)
      expect(sync.code).toBe(1)
    },
  )

  it('says why when a device without the owner key or deleg tries to grant', async () => {
    const home = join(tempDir(), 'h')
    const none = await setupKith(['agent', 'add', 'x'], { home })
    expect(none.code).toBe(3)
    await setupKith(['init'], { home })
    expect((await setupKith(['agent', 'add', 'Bad Name'], { home })).code).toBe(2)
    expect((await setupKith(['agent', 'add', 'ok', '--expires', 'soon'], { home })).stderr).toMatch(
      /not a duration/,
    )
    expect((await setupKith(['agent', 'add', 'ok'], { home })).code).toBe(0)
    const dup = await setupKith(['agent', 'add', 'ok'], { home })
    expect(dup.code).toBe(1)
    expect(dup.stderr).toMatch(/already exists/)
    const stranger = await runKith(
      ['revoke', npubEncode(publicKeyOf(generateSecretKey())), '--yes'],
      {
        home,
      },
    )
    // Not a key this fleet knows: "no such thing here" (exit 5), naming the reason.
    expect(stranger.code).toBe(5)
    expect(stranger.stderr).toMatch(/unknown-target/)
    expect((await runKith(['revoke', 'npub1nope'], { home })).stderr).toMatch(/not a valid npub/)
  })
})

describe('grants made while no hub is reachable', () => {
  it('are delivered by the running node when its hub comes back', { timeout: 60_000 }, async () => {
    const root = tempDir()
    const laptop = join(root, 'laptop')
    await setupKith(['init', '--name', 'laptop'], { home: laptop })
    const port = await freePort()
    const db = join(root, 'hub.db')
    let hub = await startHubProcess(['--db', db, '--port', String(port)], laptop)
    await setupKith(['hub', 'add', hub.url], { home: laptop })
    const node = await startNodeProcess(laptop)
    await node.waitFor(/linked to/)
    expect((await setupKith(['agent', 'add', 'claude'], { home: laptop })).code).toBe(0)
    const agentSk = readAgentSecret(laptop, 'claude')!
    await hub.stop()
    const revoked = await runKith(['agent', 'revoke', 'claude', '--yes'], { home: laptop })
    expect(revoked.stdout).toMatch(/not reached/)
    hub = await startHubProcess(['--db', db, '--port', String(port)], laptop)
    // The node's outbox carries the revocation to the hub once it is back.
    await expect
      .poll(
        async () => {
          const c = await RawClient.connect(hub.url)
          const answer = await c.auth(hub.url, agentSk)
          c.close()
          return String(answer[3])
        },
        { timeout: 30_000, interval: 500 },
      )
      .toMatch(/^restricted: revoked/)
  })
})

describe('grants through the CLI with a running node that embeds its hub', () => {
  it('applies and publishes at once instead of saying no hubs are configured', async () => {
    const home = join(tempDir(), 'laptop')
    expect((await setupKith(['init', '--name', 'laptop'], { home })).code).toBe(0)
    const node = await startNodeProcess(home, ['--port', '0'])
    const add = await setupKith(['agent', 'add', 'helper', '--', 'true'], { home })
    expect(add.code, add.stderr).toBe(0)
    const revoke = await runKith(['agent', 'revoke', 'helper', '--yes'], { home })
    expect(revoke.code, revoke.stderr).toBe(0)
    expect(revoke.stdout).not.toMatch(/no hubs configured/)
    expect(revoke.stdout).toMatch(/ws:\/\/127\.0\.0\.1:\d+: published 1/)
    await node.stop()
  })
})
