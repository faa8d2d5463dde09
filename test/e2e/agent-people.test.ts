import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it, onTestFinished } from 'vitest'
import { decode } from 'nostr-tools/nip19'
import { signEvent, type NostrEvent } from '../../src/events/event.js'
import { makeGrant, signGrantProof } from '../../src/grants/grant.js'
import { readKeyFile } from '../../src/identity/key-file.js'
import { runKith, setupKith, startHubProcess, startNodeProcess } from '../helpers/cli.js'
import { ask, history, threadedUnder } from '../helpers/node-chat.js'
import { init, pairUp } from '../helpers/pair-up.js'
import { RawClient } from '../helpers/raw-client.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

const hex = (npub: string) => {
  const d = decode(npub)
  if (d.type !== 'npub') throw new Error(`not an npub: ${npub}`)
  return d.data
}

async function addHelper(home: string): Promise<string> {
  const add = await setupKith(['agent', 'add', 'helper', '--', process.execPath, fakeAgent], {
    home,
  })
  expect(add.code, add.stderr).toBe(0)
  const list = JSON.parse((await runKith(['agent', 'list', '--json'], { home })).stdout) as {
    agents: { npub: string }[]
  }
  return hex(list.agents[0]!.npub)
}

describe('names and agents across people (real processes)', { timeout: 240_000 }, () => {
  it("a member who names a key like Alice's agent, or grants her agent's key, takes nothing of hers", async () => {
    const dir = tempDir()
    const [alice, bob] = [join(dir, 'alice'), join(dir, 'bob')]
    await init(alice, 'alice-laptop')
    const hub = await startHubProcess(['--db', join(dir, 'hub.db')], alice)
    await setupKith(['hub', 'add', hub.url], { home: alice })
    // Bob's laptop calls itself "alice".
    await init(bob, 'alice')
    await pairUp(alice, ['fleet', 'invite', '--name', 'bob'], bob, ['fleet', 'join'])
    let aliceNode = await startNodeProcess(alice)
    const bobNode = await startNodeProcess(bob)
    await aliceNode.waitFor(/linked to/)
    await bobNode.waitFor(/linked to/)
    // Both have an agent named helper; Bob's is the newer key in the fleet.
    const aliceHelper = await addHelper(alice)
    const bobHelper = await addHelper(bob)

    // Alice's @helper is her own: the prompt names only her agent, and hers answers.
    const q1 = await ask(alice, '@helper echo for alice only')
    const r1 = (await threadedUnder(alice, q1))[0]!
    expect(r1.event.pubkey).toBe(aliceHelper)
    expect(r1.event.content).toBe('for alice only')
    const prompt1 = (await history(alice)).find((i) => i.event.id === q1)!
    expect(prompt1.event.tags.filter((t) => t[0] === 'p')).toEqual([['p', aliceHelper]])
    // Bob's @helper is his.
    const q2 = await ask(bob, '@helper echo mine')
    expect((await threadedUnder(bob, q2))[0]!.event.pubkey).toBe(bobHelper)
    // Naming hers (person/name), he is refused by her policy.
    const q3 = await ask(bob, '@founder/helper echo let me in')
    expect((await threadedUnder(bob, q3))[0]!.event.content).toMatch(
      /^⚠ helper does not take prompts from bob: its policy allows owner/,
    )
    // Alice sees Bob's laptop as his, not as her.
    const log = await runKith(['log', '#ops'], { home: alice })
    expect(log.stdout).toMatch(/ alice \[device of bob\]: @helper echo mine/)
    expect(log.stdout).toMatch(/ alice-laptop \[device\]: @helper echo for alice only/)

    // Bob grants Alice's agent key under his own owner key, dated before her grant, so that a
    // node loading grants in date order finds his chain first. A hub may refuse such a grant
    // (one key, two people); if it takes it, Alice's node must still treat the agent as hers.
    const c = await RawClient.connect(hub.url)
    onTestFinished(() => c.close())
    const bobOwner = readKeyFile(join(bob, 'owner.key'))!
    expect((await c.auth(hub.url, bobOwner))[2]).toBe(true)
    const grants = (await c.req('g', { kinds: [4140] })).events as NostrEvent[]
    const bobOwnerHex = (
      JSON.parse((await runKith(['whoami', '--json'], { home: bob })).stdout) as {
        ownerHex: string
      }
    ).ownerHex
    const bobGrant = grants.find((g) => g.tags.some((t) => t[0] === 'p' && t[1] === bobOwnerHex))!
    const helperGrant = grants.find((g) =>
      g.tags.some((t) => t[0] === 'p' && t[1] === aliceHelper),
    )!
    expect(helperGrant.created_at).toBeGreaterThan(bobGrant.created_at)
    const fleet = bobGrant.tags.find((t) => t[0] === 'fleet')![1]!
    const capture = signEvent(
      makeGrant(
        {
          subject: aliceHelper,
          role: 'agent',
          fleet,
          parent: bobGrant.id,
          name: 'helper',
          // Bob cannot make the agent key's consent; his own signature stands in for it.
          proof: signGrantProof(bobOwner, bobOwnerHex, 'agent'),
        },
        helperGrant.created_at - 1,
      ),
      bobOwner,
    )
    c.send(['EVENT', capture])
    const ok = await c.ok(capture.id)
    expect(ok[3]).toMatch(/^invalid: bad-proof: /)
    // Alice's node reloads its grants (in date order) on a restart.
    await aliceNode.stop()
    aliceNode = await startNodeProcess(alice)
    await aliceNode.waitFor(/linked to/)
    const q4 = await ask(bob, '@founder/helper echo am I its owner now')
    expect((await threadedUnder(bob, q4))[0]!.event.content).toMatch(
      /^⚠ helper does not take prompts from bob: its policy allows owner/,
    )
  })
})
