import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { readKeyFile } from '../../src/identity/key-file.js'
import {
  runKith,
  setupKith,
  spawnKith,
  startHubProcess,
  startNodeProcess,
  type NodeProcess,
} from '../helpers/cli.js'
import { RawClient } from '../helpers/raw-client.js'
import { ask, threadedUnder } from '../helpers/node-chat.js'
import { tempDir } from '../helpers/tmp.js'
import { codeOf, init, pairUp } from '../helpers/pair-up.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

interface PersonJson {
  name: string
  npub: string
  role: string
  status: string
  admin: boolean
  admittedBy: string | null
  devices: { name: string; status: string; agents: { name: string; status: string }[] }[]
}

async function members(home: string): Promise<PersonJson[]> {
  const r = await runKith(['fleet', 'members', '--json'], { home })
  expect(r.code, r.stderr).toBe(0)
  return (JSON.parse(r.stdout) as { people: PersonJson[] }).people
}

const under = (home: string, question: string, kind = 9, count = 1) =>
  threadedUnder(home, question, { kind, count })

async function agentState(home: string, name: string) {
  const r = await runKith(['status', '--json'], { home })
  const status = JSON.parse(r.stdout) as {
    agents: { name: string; state: string; queue: number }[]
  }
  return status.agents.find((a) => a.name === name)
}

describe('a fleet shared by several people (real processes)', { timeout: 240_000 }, () => {
  it('the founder and admins invite; a plain member cannot; members shows who admitted whom', async () => {
    const dir = tempDir()
    const [alice, bob, carol, dave] = ['alice', 'bob', 'carol', 'dave'].map((n) => join(dir, n))
    await init(alice!, 'alice-laptop')
    const hub = await startHubProcess(['--db', join(dir, 'hub.db')], alice!)
    await setupKith(['hub', 'add', hub.url], { home: alice! })
    for (const [home, name] of [
      [bob!, 'bob-laptop'],
      [carol!, 'carol-laptop'],
      [dave!, 'dave-laptop'],
    ] as const)
      await init(home, name)

    const admitted = await pairUp(alice!, ['fleet', 'invite', '--name', 'bob'], bob!, [
      'fleet',
      'join',
    ])
    expect(admitted.inviter).toMatch(/admitted bob npub1\w+ into this fleet\n/)
    expect(admitted.joiner).toMatch(/joined the fleet of alice-laptop \(npub1\w+\) as /)
    expect(admitted.joiner).toMatch(/this machine \(bob-laptop\) is your device in it/)

    // A member who is not an admin is refused before any code is shown.
    const refused = await runKith(['fleet', 'invite'], { home: bob! })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/only the founder or an admin may invite people/)
    expect(refused.stderr).not.toMatch(/kith-pair1:/)

    // An admin can.
    await pairUp(alice!, ['fleet', 'invite', '--admin', '--name', 'carol'], carol!, [
      'fleet',
      'join',
    ])
    const byCarol = await pairUp(carol!, ['fleet', 'invite', '--name', 'dave'], dave!, [
      'fleet',
      'join',
    ])
    expect(byCarol.inviter).toMatch(/admitted dave npub1\w+ into this fleet/)

    // A device code and an invitation are not interchangeable.
    const inv = spawnKith(['fleet', 'invite'], alice!)
    const code = (await inv.waitFor(codeOf('kith fleet join')))[1]!
    const wrong = await runKith(['join', code, '--yes'], { home: join(dir, 'x') })
    expect(wrong.code).toBe(2)
    expect(wrong.stderr).toMatch(/this code invites a person into a fleet: run kith fleet join/)
    inv.child.kill('SIGTERM')

    const people = await members(dave!)
    const byName = new Map(people.map((p) => [p.name, p]))
    expect([...byName.keys()].sort()).toEqual(['bob', 'carol', 'dave', 'founder'])
    const founder = byName.get('founder')!
    expect(founder).toMatchObject({ role: 'founder', admin: true, admittedBy: null })
    expect(founder.devices.map((d) => d.name)).toEqual(['alice-laptop'])
    expect(byName.get('bob')).toMatchObject({ admin: false, admittedBy: founder.npub })
    expect(byName.get('carol')).toMatchObject({ admin: true, admittedBy: founder.npub })
    expect(byName.get('dave')).toMatchObject({
      admin: false,
      admittedBy: byName.get('carol')!.npub,
      status: 'active',
    })
    expect(byName.get('dave')!.devices).toEqual([
      expect.objectContaining({ name: 'dave-laptop', status: 'active' }),
    ])
    // An admin removes whom she admitted, not whom the founder admitted.
    const notHers = await runKith(['fleet', 'remove', 'bob', '--yes'], { home: carol! })
    expect(notHers.code).toBe(1)
    expect(notHers.stderr).toMatch(/you may not remove bob npub1\w+: only the founder may/)
    const text = await runKith(['fleet', 'members'], { home: alice! })
    expect(text.stdout).toMatch(/^dave {2}npub1\w+ {2}\(member, admitted by carol\)$/m)
    // With no hub to take it (none configured, no node running), a removal fails loudly: the
    // person removed would go on working with everyone else.
    expect((await runKith(['hub', 'rm', hub.url], { home: carol! })).code).toBe(0)
    const unheard = await runKith(['fleet', 'remove', 'dave', '--yes'], { home: carol! })
    expect(unheard.code).toBe(1)
    expect(unheard.stderr).toMatch(
      /NOT IN EFFECT YET: no hub has this revocation, so dave npub1\w+ can still use the fleet/,
    )
    expect(unheard.stdout).toMatch(/cascades to device dave-laptop/)
    await setupKith(['hub', 'add', hub.url], { home: carol! })
    const removed = await runKith(['fleet', 'remove', 'dave', '--yes'], { home: carol! })
    expect(removed.code, removed.stderr).toBe(0)
    expect(removed.stdout).toMatch(/^revoked dave npub1\w+$/m)
  })

  it('two people, four machines: agent policies, approvals, and a removal that cascades', async () => {
    const dir = tempDir()
    const home = (n: string) => join(dir, n)
    const [aliceLaptop, aliceDevbox, bobLaptop, bobDevbox] = [
      'alice-laptop',
      'alice-devbox',
      'bob-laptop',
      'bob-devbox',
    ].map(home) as [string, string, string, string]
    await init(aliceLaptop, 'alice-laptop')
    const hub = await startHubProcess(['--db', join(dir, 'hub.db')], aliceLaptop)
    await setupKith(['hub', 'add', hub.url], { home: aliceLaptop })
    await pairUp(aliceLaptop, ['pair', '--name', 'alice-devbox'], aliceDevbox, ['join'])
    await init(bobLaptop, 'bob-laptop')
    await pairUp(aliceLaptop, ['fleet', 'invite', '--name', 'bob'], bobLaptop, ['fleet', 'join'])
    // Bob enrolls his own devbox; its grant chains up through Bob to the founder.
    await pairUp(bobLaptop, ['pair', '--name', 'bob-devbox'], bobDevbox, ['join'])

    const agent = (name: string, devbox: string, ...policy: string[]) =>
      setupKith(['agent', 'add', name, ...policy, '--', process.execPath, fakeAgent], {
        home: devbox,
      }).then((r) => expect(r.code, r.stderr).toBe(0))
    await agent('shared', aliceDevbox, '--allow', 'fleet')
    await agent('mine', aliceDevbox)
    await agent('team', aliceDevbox, '--allow', 'fleet', '--approvers', 'fleet')
    await agent('bobs', bobDevbox)

    const nodes: NodeProcess[] = []
    for (const h of [aliceDevbox, bobDevbox, aliceLaptop, bobLaptop]) {
      const n = await startNodeProcess(h, ['--cancel-grace', '1'])
      nodes.push(n)
    }
    for (const n of nodes) await n.waitFor(/linked to/)
    const [, bobDevboxNode, , bobLaptopNode] = nodes

    // Bob prompts Alice's fleet-wide agent and gets the answer.
    const q1 = await ask(bobLaptop, '@shared echo hello from bob')
    expect((await under(bobLaptop, q1))[0]!.event.content).toBe('hello from bob')
    // Alice's owner-only agent refuses him, visibly, naming the policy.
    const q2 = await ask(bobLaptop, '@mine echo let me in')
    expect((await under(bobLaptop, q2))[0]!.event.content).toMatch(
      /^⚠ mine does not take prompts from \S+: its policy allows owner/,
    )
    // Alice opens it to the fleet; the running node applies it at once.
    const set = await runKith(['agent', 'set', 'mine', '--allow', 'fleet'], { home: aliceDevbox })
    expect(set.code, set.stderr).toBe(0)
    expect(set.stdout).toMatch(/mine: prompts from fleet, approvals from owner/)
    expect(set.stdout).toMatch(/applied now by the running node/)
    const q2b = await ask(bobLaptop, '@mine echo now I may')
    expect((await under(bobLaptop, q2b))[0]!.event.content).toBe('now I may')
    // Bob's own agent takes his prompts, not Alice's.
    const q3 = await ask(bobLaptop, '@bobs echo mine')
    expect((await under(bobLaptop, q3))[0]!.event.content).toBe('mine')
    const q4 = await ask(aliceLaptop, '@bobs echo hi')
    expect((await under(aliceLaptop, q4))[0]!.event.content).toMatch(/does not take prompts from/)

    // Bob cannot approve Alice's agent's tool call unless she allowed it: his answer is refused
    // visibly and the request stays open; hers goes through.
    const q5 = await ask(bobLaptop, '@shared permission rm -rf build')
    const card5 = (await under(bobLaptop, q5, 4142))[0]!
    expect((await runKith(['permit', card5.event.id, '1'], { home: bobLaptop })).code).toBe(0)
    expect((await under(aliceLaptop, q5))[0]!.event.content).toMatch(
      /may not approve shared's tool calls: its approvers are owner/,
    )
    expect((await runKith(['permit', card5.event.id, '1'], { home: aliceLaptop })).code).toBe(0)
    const replies5 = await under(bobLaptop, q5, 9, 2)
    expect(replies5.map((r) => r.event.content)).toContain('permission: selected allow')
    // With --approvers fleet, Bob's own answer is enough.
    const q6 = await ask(bobLaptop, '@team permission ls')
    const card6 = (await under(bobLaptop, q6, 4142))[0]!
    expect((await runKith(['permit', card6.event.id, '1'], { home: bobLaptop })).code).toBe(0)
    expect((await under(bobLaptop, q6))[0]!.event.content).toBe('permission: selected allow')

    // Interrupting is cancelling: Bob may not on Alice's agent (approvers: owner); his message
    // is queued as a plain prompt instead, and he is told.
    const qi = await runKith(['send', '#ops', '@shared echo me first', '--interrupt', '--json'], {
      home: bobLaptop,
    })
    const qiId = (JSON.parse(qi.stdout) as { id: string }).id
    expect((await under(bobLaptop, qiId, 9, 2)).map((r) => r.event.content)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^⚠ you may not interrupt shared: its approvers are owner; your prompt is queued/,
        ),
        'me first',
      ]),
    )

    // Bob starts a long turn and queues another behind it (a reply in its thread: the same
    // session); then Alice removes him.
    const q7 = await ask(bobLaptop, '@shared hang')
    await expect
      .poll(() => agentState(aliceDevbox, 'shared'), { timeout: 20_000 })
      .toMatchObject({ state: 'working' })
    const queued = await runKith(
      ['send', '#ops', '@shared echo still queued', '--reply', q7, '--json'],
      { home: bobLaptop },
    )
    expect(queued.code, queued.stderr).toBe(0)
    const q8 = (JSON.parse(queued.stdout) as { id: string }).id
    await expect
      .poll(() => agentState(aliceDevbox, 'shared'), { timeout: 20_000 })
      .toMatchObject({ queue: 1 })
    const removed = await runKith(['fleet', 'remove', 'bob', '--yes'], { home: aliceLaptop })
    expect(removed.code, removed.stderr).toBe(0)
    expect(removed.stdout).toMatch(/^revoked bob npub1\w+$/m)
    expect(removed.stdout).toMatch(/cascades to device bob-laptop/)
    expect(removed.stdout).toMatch(/cascades to device bob-devbox/)
    expect(removed.stdout).toMatch(/cascades to agent bobs/)

    // His queued prompt is dropped with a notice, his running turn is cancelled.
    expect((await under(aliceLaptop, q8))[0]!.event.content).toMatch(
      /^⚠ shared did not answer: dropped: its author is no longer a member of this fleet/,
    )
    // (Under q7 are also q8, a reply in its thread, and q8's notice.)
    expect((await under(aliceLaptop, q7, 9, 3)).map((r) => r.event.content)).toContainEqual(
      expect.stringMatching(/^⏹ shared: turn cancelled/),
    )
    // His devices' connections are dropped and their events refused.
    // (the hub closed its connection; reconnecting, it is refused at AUTH)
    await bobDevboxNode!.waitFor(/AUTH refused: restricted: revoked/, 20_000)
    // His node says so plainly and stops retrying; kith status shows it.
    await bobDevboxNode!.waitFor(/removed from the fleet/, 20_000)
    const bobStatus = await runKith(['status', '--json'], { home: bobDevbox })
    const status = JSON.parse(bobStatus.stdout) as {
      removed: string | null
      hubs: { state: string }[]
    }
    expect(status.removed).toMatch(/revoked/)
    expect(status.hubs.map((h) => h.state)).toEqual(['revoked'])
    // What his machines post is refused with the reason, not queued as if it might still go.
    await bobLaptopNode!.waitFor(/removed from the fleet/, 20_000)
    const late = await runKith(['send', '#ops', '@shared echo after removal'], { home: bobLaptop })
    expect(late.code).not.toBe(0)
    expect(late.stderr).toMatch(/this device was removed from the fleet/)
    const raw = await RawClient.connect(hub.url)
    const authed = await raw.auth(hub.url, readKeyFile(join(bobDevbox, 'device.key'))!)
    expect(authed[2]).toBe(false)
    expect(authed[3]).toMatch(/^restricted: /)
    raw.close()
    const people = await members(aliceLaptop)
    const bob = people.find((p) => p.name === 'bob')!
    expect(bob.status).toBe('revoked')
    expect(bob.devices.map((d) => d.status)).toEqual(['revoked', 'revoked'])
  })
})
