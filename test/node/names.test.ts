import { describe, expect, it, onTestFinished } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { npubEncode } from 'nostr-tools/nip19'
import { isKithError } from '../../src/errors.js'
import { mentionedNames } from '../../src/events/chat.js'
import { publicKeyOf, signEvent, verifyEventSignature } from '../../src/events/event.js'
import { signGrant, type GrantSpec } from '../../src/grants/grant.js'
import { GrantVerifier } from '../../src/grants/verifier.js'
import { Names } from '../../src/grants/names.js'
import { NodeStore } from '../../src/store/node-store.js'
import { tempDir } from '../helpers/tmp.js'

const now = Math.floor(Date.now() / 1000)
const key = () => {
  const sk = generateSecretKey()
  return { sk, pk: publicKeyOf(sk) }
}

/**
 * Founder alice (laptop, agent "helper"), owner bob admitted as "bob" (laptop named "alice" by
 * its own profile, agent "helper" made later, owner key publishing a profile named "alice"),
 * owner carol (no helper).
 */
function fleet() {
  const alice = key()
  const v = new GrantVerifier({ founder: alice.pk, verifySignature: verifyEventSignature })
  const store = new NodeStore(tempDir())
  onTestFinished(() => store.close())
  let at = now - 100
  const secrets = new Map<string, Uint8Array>()
  const grant = (spec: Omit<GrantSpec, 'fleet' | 'proof'>, sk: Uint8Array) => {
    const e = signGrant({ ...spec, fleet: alice.pk }, sk, secrets.get(spec.subject)!, at++)
    expect(v.add(e)).toEqual({ status: 'accepted' })
    return e
  }
  const profile = (sk: Uint8Array, name: string) =>
    store.events.insertBatch([
      signEvent({ kind: 0, created_at: at++, tags: [], content: JSON.stringify({ name }) }, sk),
    ])
  const [aliceLaptop, aliceHelper, bob, bobLaptop, bobHelper, carol, carolLaptop] = [
    key(),
    key(),
    key(),
    key(),
    key(),
    key(),
    key(),
  ] as const
  for (const k of [aliceLaptop, aliceHelper, bob, bobLaptop, bobHelper, carol, carolLaptop])
    secrets.set(k.pk, k.sk)
  grant({ subject: aliceLaptop.pk, role: 'device', deleg: true, name: 'laptop' }, alice.sk)
  grant({ subject: aliceHelper.pk, role: 'agent', name: 'helper' }, alice.sk)
  const gb = grant({ subject: bob.pk, role: 'owner', name: 'bob' }, alice.sk)
  grant({ subject: bobLaptop.pk, role: 'device', parent: gb.id, name: 'bob-laptop' }, bob.sk)
  // Bob's agent is the newest key named helper in the fleet.
  grant({ subject: bobHelper.pk, role: 'agent', parent: gb.id, name: 'helper' }, bob.sk)
  const gc = grant({ subject: carol.pk, role: 'owner', name: 'carol' }, alice.sk)
  grant({ subject: carolLaptop.pk, role: 'device', parent: gc.id, name: 'carol-laptop' }, carol.sk)
  profile(bobLaptop.sk, 'alice')
  profile(bob.sk, 'alice')
  const names = (self: string) => new Names(v, store.reads, self)
  return { v, names, alice, aliceLaptop, aliceHelper, bob, bobLaptop, bobHelper, carolLaptop }
}

describe('@name resolution (a member naming a key like yours gets nothing meant for you)', () => {
  it("resolves among the sender's own person first, whoever named a key the same", () => {
    const f = fleet()
    const n = f.names(f.aliceLaptop.pk)
    // Bob's helper is newer; Alice's own helper still wins for Alice.
    expect(n.resolve('helper', f.aliceLaptop.pk)).toBe(f.aliceHelper.pk)
    expect(n.resolve('@HELPER', f.aliceLaptop.pk)).toBe(f.aliceHelper.pk)
    // ...and Bob's for Bob.
    expect(n.resolve('helper', f.bobLaptop.pk)).toBe(f.bobHelper.pk)
  })

  it('refuses a name two other people use, listing the person-qualified names', () => {
    const f = fleet()
    const n = f.names(f.carolLaptop.pk)
    let caught: unknown
    try {
      n.resolve('helper', f.carolLaptop.pk)
    } catch (err) {
      caught = err
    }
    expect(isKithError(caught, 'usage')).toBe(true)
    expect((caught as Error).message).toBe(
      '@helper is ambiguous: bob/helper, founder/helper; write one of those (person/name)',
    )
    expect(n.resolve('bob/helper', f.carolLaptop.pk)).toBe(f.bobHelper.pk)
    expect(n.resolve('founder/helper', f.carolLaptop.pk)).toBe(f.aliceHelper.pk)
    expect(n.resolve(`${npubEncode(f.bob.pk)}/helper`, f.carolLaptop.pk)).toBe(f.bobHelper.pk)
    expect(n.resolve('carol/helper', f.carolLaptop.pk)).toBeUndefined()
    expect(n.qualified(f.bobHelper.pk)).toBe('bob/helper')
  })

  it("a device or a profile named like a person never takes that person's name", () => {
    const f = fleet()
    const n = f.names(f.carolLaptop.pk)
    // Bob's laptop calls itself "alice", and so does Bob's owner key.
    expect(n.who(f.bobLaptop.pk)).toMatchObject({ name: 'alice', role: 'device', person: 'bob' })
    expect(n.label(f.bobLaptop.pk)).toBe('alice (device of bob)')
    expect(n.who(f.bob.pk)).toMatchObject({ name: 'bob', role: 'person' })
    expect(n.who(f.alice.pk)).toMatchObject({ name: 'founder', role: 'person' })
    // "@bob" is the person, "@bob/alice" the laptop; "@alice" is only Bob's laptop's name.
    expect(n.resolve('bob', f.carolLaptop.pk)).toBe(f.bob.pk)
    expect(n.resolve('bob/alice', f.carolLaptop.pk)).toBe(f.bobLaptop.pk)
    // This node's own person's devices are shown without "of".
    expect(f.names(f.bobLaptop.pk).who(f.bobLaptop.pk)).toMatchObject({ mine: true })
    expect(f.names(f.bobLaptop.pk).label(f.bobLaptop.pk)).toBe('alice (device)')
  })

  it('shows two people of the same name with their npub', () => {
    const f = fleet()
    const dave = key()
    const e = signGrant(
      { subject: dave.pk, role: 'owner', fleet: f.alice.pk, name: 'bob' },
      f.alice.sk,
      dave.sk,
      now,
    )
    expect(f.v.add(e)).toEqual({ status: 'accepted' })
    const n = f.names(f.carolLaptop.pk)
    expect(n.who(dave.pk).name).toMatch(/^bob \(npub1\w{7}…\)$/)
    expect(n.who(f.bobLaptop.pk).person).toMatch(/^bob \(npub1\w{7}…\)$/)
    expect(n.qualified(f.bobHelper.pk)).toBe(`${npubEncode(f.bob.pk)}/helper`)
    expect(() => n.resolve('bob/helper', f.carolLaptop.pk)).toThrow(/2 people are named bob/)
  })

  it('finds person-qualified mentions in a message', () => {
    expect(mentionedNames('@bob/helper look, and @helper too; mail a@b.c')).toEqual([
      'bob/helper',
      'helper',
    ])
  })
})
