import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it, onTestFinished } from 'vitest'
import { parseAgentPolicy } from '../../src/events/agent-policy.js'
import { signEvent, type NostrEvent } from '../../src/events/event.js'
import { makePermissionDecision } from '../../src/events/permission-decision.js'
import { readKeyFile } from '../../src/identity/key-file.js'
import type { OpenCard } from '../../src/node/permission-cards.js'
import { runKith, setupKith, startHubProcess, startNodeProcess } from '../helpers/cli.js'
import { ask, threadedUnder } from '../helpers/node-chat.js'
import { init, pairUp } from '../helpers/pair-up.js'
import { RawClient } from '../helpers/raw-client.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

/** The open cards a device knows, as `kith permit --json` lists them. */
async function openCards(home: string): Promise<OpenCard[]> {
  const r = await runKith(['permit', '--json'], { home })
  expect(r.code, r.stderr).toBe(0)
  return (JSON.parse(r.stdout) as { requests: OpenCard[] }).requests
}

/** Waits (expect.poll, as threadedUnder) until `home` lists the card with `allowed` people counted. */
async function tallied(home: string, id: string, allowed: number): Promise<OpenCard> {
  let card: OpenCard | undefined
  await expect
    .poll(
      async () => {
        card = (await openCards(home)).find((c) => c.id === id)
        return card?.quorum?.allowedBy.length
      },
      { timeout: 40_000 },
    )
    .toBe(allowed)
  return card!
}

describe('two-person approval (real processes)', { timeout: 300_000 }, () => {
  it('a quorum card runs only after two people allow it; two devices of one person are one; a Reject ends it', async () => {
    const dir = tempDir()
    const home = (n: string) => join(dir, n)
    const [aliceLaptop, alicePhone, bob, carol] = [
      'alice-laptop',
      'alice-phone',
      'bob',
      'carol',
    ].map(home) as [string, string, string, string]
    // Plain, so the test can post a decision of its own making (below) as a client would.
    expect(
      (await setupKith(['init', '--name', 'alice-laptop', '--plain'], { home: aliceLaptop })).code,
    ).toBe(0)
    const hub = await startHubProcess(['--db', join(dir, 'hub.db')], aliceLaptop)
    await setupKith(['hub', 'add', hub.url], { home: aliceLaptop })
    await pairUp(aliceLaptop, ['pair', '--name', 'alice-phone'], alicePhone, ['join'])
    await init(bob, 'bob')
    await pairUp(aliceLaptop, ['fleet', 'invite', '--name', 'bob'], bob, ['fleet', 'join'])
    await init(carol, 'carol')
    await pairUp(aliceLaptop, ['fleet', 'invite', '--name', 'carol'], carol, ['fleet', 'join'])
    // allow-all would run every call at once: a quorum kind still waits for people.
    const add = await setupKith(
      [
        'agent',
        'add',
        'deploy',
        '--allow',
        'fleet',
        '--approvers',
        'fleet',
        '--permissions',
        'allow-all',
        '--quorum',
        '2',
        '--for',
        'execute,edit',
        '--',
        process.execPath,
        fakeAgent,
      ],
      { home: aliceLaptop },
    )
    expect(add.code, add.stderr).toBe(0)
    for (const h of [aliceLaptop, alicePhone, bob, carol])
      await (await startNodeProcess(h)).waitFor(/linked to/)

    // Bob asks for a deploy: the card needs two people and offers no "always".
    const q1 = await ask(bob, '@deploy permission-execute deploy prod')
    const card1 = (await threadedUnder(bob, q1, { kind: 4142 }))[0]!
    const content = JSON.parse(card1.event.content) as {
      options: { optionId: string }[]
      quorum: unknown
      policy: string
    }
    expect(content.quorum).toEqual({ n: 2, for: ['execute', 'edit'] })
    expect(content.policy).toMatch(/^[0-9a-f]{64}$/)
    expect(content.options.map((o) => o.optionId)).toEqual(['allow', 'reject'])
    // The policy it names is on the wire, signed by the hosting device: Bob's reading counts it.
    const c = await RawClient.connect(hub.url)
    onTestFinished(() => c.close())
    expect((await c.auth(hub.url, readKeyFile(join(bob, 'device.key'))!))[2]).toBe(true)
    const [policy] = (await c.req('p', { ids: [content.policy] })).events as NostrEvent[]
    const laptopKey = (
      JSON.parse((await runKith(['whoami', '--json'], { home: aliceLaptop })).stdout) as {
        deviceHex: string
      }
    ).deviceHex
    expect(policy).toMatchObject({ kind: 34151, pubkey: laptopKey })
    expect(parseAgentPolicy(policy!)).toMatchObject({
      allow: 'fleet',
      approvers: 'fleet',
      permissions: 'allow-all',
      quorum: { n: 2, for: ['execute', 'edit'] },
    })

    // Alice allows from her laptop: 1 of 2, and the agent waits.
    const a1 = await runKith(['permit', card1.event.id, 'allow'], { home: aliceLaptop })
    expect(a1.code, a1.stderr).toBe(0)
    const notice1 = (await threadedUnder(bob, q1))[0]!.event.content
    expect(notice1).toBe(
      '✓ alice-laptop allowed "deploy prod": 1 of 2 — waiting for another approver',
    )
    // Her phone still sees the card, with her allow counted, and cannot allow it again.
    const seen = await tallied(alicePhone, card1.event.id, 1)
    expect(seen.quorum).toMatchObject({ n: 2, mine: true })
    expect(seen.quorum!.text).toBe('1 of 2 — waiting for another approver')
    const again = await runKith(['permit', card1.event.id, 'allow'], { home: alicePhone })
    expect(again.code).toBe(1)
    expect(again.stderr).toMatch(/you already allowed it \(1 of 2 — waiting for another approver\)/)
    // Signed by her phone past the CLI's check, the host still counts her once.
    const phone = await RawClient.connect(hub.url)
    onTestFinished(() => phone.close())
    const phoneKey = readKeyFile(join(alicePhone, 'device.key'))!
    expect((await phone.auth(hub.url, phoneKey))[2]).toBe(true)
    const fleet = card1.event.tags.find((t) => t[0] === 'fleet')![1]!
    const twice = signEvent(
      makePermissionDecision(
        {
          request: { id: card1.event.id, channel: 'ops', agent: card1.event.pubkey },
          fleet,
          optionId: 'allow',
        },
        Math.floor(Date.now() / 1000),
      ),
      phoneKey,
    )
    phone.send(['EVENT', twice])
    const ok = await phone.ok(twice.id)
    expect(ok[2], String(ok[3])).toBe(true)
    const notices = await threadedUnder(bob, q1, { count: 2 })
    expect(notices[1]!.event.content).toBe(
      'ℹ alice-phone\'s person already allowed "deploy prod": two devices of one person count once; 1 of 2 — waiting for another approver',
    )
    const listed = await runKith(['permit'], { home: aliceLaptop })
    expect(listed.stdout).toMatch(/👥 needs 2 people: 1 of 2 — waiting for another approver/)

    // Carol allows: two people, and the call runs.
    const c1 = await runKith(['permit', card1.event.id, 'allow'], { home: carol })
    expect(c1.code, c1.stderr).toBe(0)
    const replies1 = (await threadedUnder(bob, q1, { count: 3 })).map((r) => r.event.content)
    expect(replies1).toEqual([notice1, notices[1]!.event.content, 'permission: selected allow'])

    // A second deploy: Bob allows, Carol rejects; the Reject ends it, one allow short.
    const q2 = await ask(bob, '@deploy permission-execute drop the database')
    const card2 = (await threadedUnder(bob, q2, { kind: 4142 }))[0]!
    expect((await runKith(['permit', card2.event.id, 'allow'], { home: bob })).code).toBe(0)
    expect((await threadedUnder(carol, q2))[0]!.event.content).toMatch(/1 of 2 — waiting/)
    expect((await runKith(['permit', card2.event.id, 'reject'], { home: carol })).code).toBe(0)
    const replies2 = (await threadedUnder(bob, q2, { count: 2 })).map((r) => r.event.content)
    expect(replies2[1]).toBe('permission: selected reject')

    // A call of a kind outside the quorum runs under allow-all without asking anyone.
    const q3 = await ask(bob, '@deploy permission-read README.md')
    expect((await threadedUnder(bob, q3))[0]!.event.content).toBe('permission: selected allow')

    // The host's store audits clean: each card under the policy it names, decided as it allows.
    const audited = await runKith(['audit', '--json'], { home: aliceLaptop })
    expect(audited.code, audited.stdout).toBe(0)
    const report = JSON.parse(audited.stdout) as {
      turns: { id: string; cards: { tally: { state: string }; policy: string }[] }[]
      flags: unknown[]
    }
    expect(report.flags).toEqual([])
    const cardsOf = (q: string) => report.turns.find((t) => t.id === q)?.cards ?? []
    expect(cardsOf(q1).map((c) => c.tally.state)).toEqual(['allowed'])
    expect(cardsOf(q2).map((c) => c.tally.state)).toEqual(['rejected'])
    expect(cardsOf(q1)[0]!.policy).toBe(content.policy)
  })
})
