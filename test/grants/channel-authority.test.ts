import { describe, expect, it } from 'vitest'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { makeChannelDefinition } from '../../src/events/channel-def.js'
import { ChannelBook, definitionSkewSeconds } from '../../src/grants/channels.js'
import type { GrantSpec } from '../../src/grants/grant.js'
import { makeRevocation } from '../../src/grants/revocation.js'
import { GrantVerifier } from '../../src/grants/verifier.js'
import { Kind } from '../../src/events/kinds.js'
import { newSecret, signTestGrant } from '../helpers/secrets.js'

/** The clock every decision below is asked at; the fleet was formed 1000 s before. */
const now = 1_750_000_000
const t0 = now - 1000
const key = () => {
  const sk = newSecret()
  return { sk, pk: publicKeyOf(sk) }
}
type Key = ReturnType<typeof key>

/**
 * founder → alice (owner, admin) → bob (owner) → bob's laptop;
 * founder → carol (owner) → carol's laptop (channel caps: none, i.e. all);
 * founder → dave (owner, may post in #general only). All admitted at t0.
 */
function fleet() {
  const founder = key()
  const [alice, bob, bobLaptop, carol, carolLaptop, dave] = [
    key(),
    key(),
    key(),
    key(),
    key(),
    key(),
  ]
  const grants: NostrEvent[] = []
  const grant = (spec: Omit<GrantSpec, 'fleet' | 'proof'>, sk: Uint8Array, at = t0) => {
    const e = signTestGrant({ ...spec, fleet: founder.pk }, sk, at)
    grants.push(e)
    return e
  }
  const ga = grant({ subject: alice.pk, role: 'owner', deleg: true, name: 'alice' }, founder.sk)
  const gb = grant({ subject: bob.pk, role: 'owner', parent: ga.id, name: 'bob' }, alice.sk)
  grant({ subject: bobLaptop.pk, role: 'device', parent: gb.id }, bob.sk)
  const gc = grant({ subject: carol.pk, role: 'owner', name: 'carol' }, founder.sk)
  grant({ subject: carolLaptop.pk, role: 'device', parent: gc.id }, carol.sk)
  grant({ subject: dave.pk, role: 'owner', channels: ['general'], name: 'dave' }, founder.sk)
  const def = (
    who: Key,
    at: number,
    spec: { creator?: Key; members?: Key[]; private?: boolean; channel?: string } = {},
  ) =>
    signEvent(
      makeChannelDefinition(
        {
          channel: spec.channel ?? 'ops',
          fleet: founder.pk,
          creator: (spec.creator ?? who).pk,
          private: spec.private ?? true,
          members: spec.private === false ? [] : (spec.members ?? [who]).map((k) => k.pk),
        },
        at,
      ),
      who.sk,
    )
  const revoke = (who: Key, target: Key, at: number) =>
    signEvent(makeRevocation({ fleet: founder.pk, keys: [target.pk] }, at), who.sk)
  const say = (who: Key, at: number, channel = 'ops') =>
    signEvent({ kind: 9, created_at: at, tags: [['h', channel]], content: 'hi' }, who.sk)
  /** A fresh verifier and book holding the fleet's grants. */
  const book = () => {
    const v = new GrantVerifier({ founder: founder.pk, verifySignature: () => true })
    for (const g of grants) expect(v.add(g, { verified: true })).toEqual({ status: 'accepted' })
    return new ChannelBook(v)
  }
  /** Gives the book one event of a history, as a hub or node that stored it would. */
  const feed = (b: ChannelBook, e: NostrEvent, admit: boolean) => {
    if (e.kind === Kind.Revocation) {
      b.grants.add(e, { verified: true })
      b.noteEvent(e)
    } else if (e.kind === Kind.ChannelDefinition) {
      b.add(e, admit ? { now } : {})
    } else {
      b.noteEvent(e)
    }
  }
  return { founder, alice, bob, bobLaptop, carol, carolLaptop, dave, def, revoke, say, book, feed }
}

function* permutations<T>(items: readonly T[]): Generator<T[]> {
  if (items.length <= 1) {
    yield [...items]
    return
  }
  for (let i = 0; i < items.length; i++) {
    const rest = [...items.slice(0, i), ...items.slice(i + 1)]
    for (const p of permutations(rest)) yield [items[i]!, ...p]
  }
}

describe('which definition is in effect depends on the set, not on arrival order', () => {
  it('gives the same answer for every order of the same history', () => {
    const f = fleet()
    // Carol posts in #ops first; Bob defines it (blocked: Carol used it before), Carol then
    // defines it herself, and also dates one ahead; Alice (admin) re-signs it naming Bob; Alice
    // removes Bob; Bob then signs one more, after his removal.
    const history = [
      f.say(f.carolLaptop, t0 + 50),
      f.def(f.bob, t0 + 100),
      f.def(f.carol, t0 + 200),
      f.def(f.carol, now + 600),
      f.def(f.alice, t0 + 300, { creator: f.bob, members: [f.bob, f.alice] }),
      f.revoke(f.alice, f.bob, t0 + 400),
      f.def(f.bob, t0 + 500, { members: [f.bob, f.carol] }),
    ]
    const resign = history[4]!
    const probe = [f.alice, f.carol, f.carolLaptop, f.dave, f.bobLaptop]
    const answer = (b: ChannelBook, at: number) => ({
      definition: b.definition('ops', at)?.id,
      creator: b.state('ops', at).creator,
      members: probe.map((k) => b.isMember(k.pk, 'ops', at)),
      sees: probe.map((k) => b.maySeeDefinition(k.pk, 'ops', at)),
    })
    const expected = {
      definition: resign.id,
      creator: f.bob.pk,
      members: [true, false, false, false, false],
      sees: [true, false, false, false, false],
    }
    let orders = 0
    for (const order of permutations(history)) {
      for (const admit of [false, true]) {
        const b = f.book()
        for (const e of order) f.feed(b, e, admit)
        expect(answer(b, now)).toEqual(expected)
        // Once Carol's future-dated definition is due it counts, and still does not win: an
        // authority named Bob the creator.
        expect(answer(b, now + 700)).toEqual(expected)
      }
      orders++
    }
    expect(orders).toBe(5040)
  })

  it('names as creator whoever used the channel first, when no authority defined it', () => {
    const f = fleet()
    const b = f.book()
    b.noteEvent(f.say(f.carolLaptop, t0 + 50))
    // Bob may not define a channel Carol posted in before; Carol may.
    expect(b.add(f.def(f.bob, t0 + 100), { now })).toEqual({
      status: 'rejected',
      code: 'no-authority',
      reason: '#ops is already in use by others: only the founder or an admin may define it',
    })
    expect(b.add(f.def(f.carol, t0 + 200), { now })).toEqual({ status: 'accepted' })
    expect(b.state('ops', now).creator).toBe(f.carol.pk)
    // Bob's own earlier posts do not block him from defining another channel.
    b.noteEvent(f.say(f.bobLaptop, t0 + 10, 'dev'))
    expect(b.add(f.def(f.bob, t0 + 100, { channel: 'dev' }), { now })).toEqual({
      status: 'accepted',
    })
    // An admin may define a channel in use.
    expect(b.add(f.def(f.alice, t0 + 300, { creator: f.bob }), { now })).toEqual({
      status: 'accepted',
    })
    expect(b.state('ops', now).creator).toBe(f.bob.pk)
  })
})

describe('attacks on a channel by a member', () => {
  it('a squatter cannot win with a definition dated ahead', () => {
    const f = fleet()
    const b = f.book()
    b.noteEvent(f.say(f.carolLaptop, now - 100))
    // Bob's first definition of #ops, private to himself, dated 15 minutes ahead.
    const ahead = f.def(f.bob, now + 900)
    expect(b.add(ahead, { now })).toEqual({
      status: 'rejected',
      code: 'future-dated',
      reason: `a channel definition may be dated at most ${definitionSkewSeconds} s ahead; check the clock`,
    })
    expect(b.isPrivate('ops', now)).toBe(false)
    // Kept anyway (a plain relay handed it over), it does not count before its date, and after
    // it the channel is one Carol used first: Bob's definition never counts.
    b.add(ahead)
    expect(b.isPrivate('ops', now)).toBe(false)
    expect(b.isPrivate('ops', now + 2000)).toBe(false)
    // A correction dated now by the real user is in effect, now and after the squatter's date.
    expect(b.add(f.def(f.carol, now, { private: false }), { now })).toEqual({ status: 'accepted' })
    expect(b.state('ops', now + 2000).creator).toBe(f.carol.pk)
    expect(b.isMember(f.bobLaptop.pk, 'ops', now + 2000)).toBe(true)
  })

  it('a squatter back-dated before the first message cannot leave out those who posted; an admin may', () => {
    const f = fleet()
    const b = f.book()
    b.noteEvent(f.say(f.carolLaptop, t0 + 500))
    // Bob back-dates a private #ops to t0 + 100, before Carol's first message: a date is its
    // signer's word, so it is refused for leaving Carol out, not taken for the oldest.
    expect(b.add(f.def(f.bob, t0 + 100), { now })).toMatchObject({
      status: 'rejected',
      code: 'no-authority',
      reason:
        '#ops is already used by people this definition leaves out: only the founder or an admin may define it so',
    })
    expect(b.isMember(f.carolLaptop.pk, 'ops', now)).toBe(true)
    expect(b.isPrivate('ops', now)).toBe(false)
    // Not before his own admission, though.
    expect(b.add(f.def(f.bob, t0 - 100, { channel: 'dev' }), { now })).toMatchObject({
      status: 'rejected',
      code: 'no-authority',
      reason: 'the definition is dated before its author was admitted',
    })
    // Listing Carol, it is taken: nobody who posted is left out.
    expect(b.add(f.def(f.bob, t0 + 100, { members: [f.bob, f.carol] }), { now })).toEqual({
      status: 'accepted',
    })
    // Alice (admin) re-signs #ops, naming Carol its creator and leaving Bob out: she may.
    expect(b.add(f.def(f.alice, now, { creator: f.carol, members: [f.carol] }), { now })).toEqual({
      status: 'accepted',
    })
    expect(b.state('ops', now).creator).toBe(f.carol.pk)
    // Bob's definitions stop counting, old or new (he no longer sees #ops); Carol may change it.
    expect(b.add(f.def(f.bob, now + 1), { now })).toMatchObject({
      status: 'rejected',
      code: 'channel-not-allowed',
    })
    expect(b.add(f.def(f.carol, now + 2, { members: [f.carol] }), { now })).toEqual({
      status: 'accepted',
    })
  })

  it('keeps a removed creator’s channel private on a fresh hub, and ignores what they sign after', () => {
    const f = fleet()
    const created = f.def(f.bob, t0 + 100, { members: [f.bob, f.alice] })
    const removal = f.revoke(f.alice, f.bob, t0 + 400)
    // A fresh hub: it holds the grants and the removal, then is sent Bob's old definition.
    const b = f.book()
    f.feed(b, removal, true)
    expect(b.add(created, { now })).toEqual({ status: 'accepted' })
    expect(b.isPrivate('ops', now)).toBe(true)
    expect(b.isMember(f.carolLaptop.pk, 'ops', now)).toBe(false)
    expect(b.isMember(f.alice.pk, 'ops', now)).toBe(true)
    // What Bob signs after his removal does not count.
    expect(b.add(f.def(f.bob, t0 + 500, { private: false }), { now })).toMatchObject({
      status: 'rejected',
      code: 'no-authority',
      reason: "the definition is dated after its author's removal",
    })
    // Back-dated to before it, it does, until an authority re-signs at the removal (what
    // kith fleet remove does): then the re-sign is newer than anything Bob can still date.
    expect(b.add(f.def(f.bob, t0 + 399, { private: false }), { now })).toEqual({
      status: 'accepted',
    })
    expect(b.isPrivate('ops', now)).toBe(false)
    const resign = f.def(f.alice, t0 + 400, { creator: f.bob, members: [f.bob, f.alice] })
    expect(b.add(resign, { now })).toEqual({ status: 'accepted' })
    expect(b.isPrivate('ops', now)).toBe(true)
    expect(b.add(f.def(f.bob, t0 + 398, { private: false }), { now })).toEqual({
      status: 'superseded',
    })
    expect(b.definition('ops', now)?.id).toBe(resign.id)
  })

  it('does not let a revocation by someone without authority over the creator end theirs', () => {
    const f = fleet()
    const b = f.book()
    // Carol (a plain owner, not above Bob) "revokes" Bob before his definition: it ends nothing.
    b.noteEvent(f.revoke(f.carol, f.bob, t0 + 50))
    expect(b.add(f.def(f.bob, t0 + 100), { now })).toEqual({ status: 'accepted' })
    expect(b.isPrivate('ops', now)).toBe(true)
  })

  it('refuses a non-member exactly as it refuses a key whose grant excludes the channel', () => {
    const f = fleet()
    const b = f.book()
    expect(b.add(f.def(f.carol, now), { now })).toEqual({ status: 'accepted' })
    const post = (k: Key, channel: string) => ({ kind: 9, tags: [['h', channel]], pubkey: k.pk })
    // Bob is not a member of private #ops; Dave's grant allows #general only.
    const nonMember = b.mayPost(post(f.bobLaptop, 'ops'), now)
    const capped = b.grants.authorize(f.dave.pk, { now, kind: 9, channel: 'ops' })
    expect(nonMember).toEqual(capped)
    expect(nonMember).toEqual({
      ok: false,
      code: 'channel-not-allowed',
      reason: 'channel #ops is not allowed for this key',
    })
    // Defining it: the same refusal, for Bob (may not see #ops) and for Dave (caps).
    const byBob = b.add(f.def(f.bob, now + 1, { creator: f.carol }), { now })
    const byDave = b.add(f.def(f.dave, now + 1), { now })
    expect(byBob).toEqual(byDave)
    expect(byBob).toEqual({
      status: 'rejected',
      code: 'channel-not-allowed',
      reason: 'channel #ops is not allowed for this key',
    })
    // A member who may not change it sees it, so may be told why.
    expect(b.add(f.def(f.carol, now + 1, { members: [f.carol, f.bob] }), { now })).toEqual({
      status: 'accepted',
    })
    expect(b.add(f.def(f.bob, now + 2, { creator: f.carol }), { now })).toMatchObject({
      code: 'no-authority',
      reason: "only the founder, an admin or the channel's creator may change #ops",
    })
  })
})
