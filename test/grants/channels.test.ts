import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf, signEvent, verifyEventSignature } from '../../src/events/event.js'
import {
  channelsOfEvent,
  makeChannelDefinition,
  parseChannelDefinition,
} from '../../src/events/channel-def.js'
import { ChannelBook } from '../../src/grants/channels.js'
import { signGrant, type GrantSpec } from '../../src/grants/grant.js'
import { makeRevocation } from '../../src/grants/revocation.js'
import { GrantVerifier } from '../../src/grants/verifier.js'
import { isKithError } from '../../src/errors.js'

const now = 1_750_000_000
const key = () => {
  const sk = generateSecretKey()
  return { sk, pk: publicKeyOf(sk) }
}
const founder = key()
const fleet = founder.pk
const hex = (c: string) => c.repeat(64)

const raw = (tags: string[][], kind = 34140) =>
  signEvent({ kind, created_at: now, tags, content: '' }, founder.sk)

describe('parseChannelDefinition', () => {
  it('round-trips what makeChannelDefinition makes', () => {
    const event = signEvent(
      makeChannelDefinition(
        {
          channel: 'ops',
          fleet,
          creator: founder.pk,
          private: true,
          members: [hex('a'), hex('b'), hex('a')],
          about: 'on-call',
        },
        now,
      ),
      founder.sk,
    )
    expect(event.tags).toEqual([
      ['d', 'ops'],
      ['fleet', fleet],
      ['creator', founder.pk],
      ['private'],
      ['p', hex('a')],
      ['p', hex('b')],
    ])
    expect(parseChannelDefinition(event)).toMatchObject({
      channel: 'ops',
      creator: founder.pk,
      author: founder.pk,
      private: true,
      members: [hex('a'), hex('b')],
      about: 'on-call',
    })
    expect(channelsOfEvent(event)).toEqual(['ops'])
  })

  const base = [
    ['d', 'ops'],
    ['fleet', fleet],
    ['creator', hex('c')],
  ]
  const invalid: [string, string[][], RegExp, number?][] = [
    ['wrong kind', base, /a channel definition is kind 34140/, 30000],
    ['no d', base.slice(1), /d must be a channel name/],
    ['d with #', [['d', '#ops'], ...base.slice(1)], /d must be a channel name/],
    ['d uppercase', [['d', 'Ops'], ...base.slice(1)], /d must be a channel name/],
    ['two d', [...base, ['d', 'dev']], /more than one d tag/],
    ['no fleet', [base[0]!, base[2]!], /fleet must be/],
    ['bad creator', [base[0]!, base[1]!, ['creator', 'npub1x']], /creator must be/],
    ['private with a value', [...base, ['private', 'yes']], /private tag has no value/],
    ['two private', [...base, ['private'], ['private']], /more than one private tag/],
    ['bad member', [...base, ['private'], ['p', 'alice']], /p \(member\) tags/],
    ['members of an open channel', [...base, ['p', hex('a')]], /an open channel lists no members/],
  ]
  for (const [name, tags, message, kind] of invalid) {
    it(`refuses ${name} as invalid: malformed`, () => {
      let caught: unknown
      try {
        parseChannelDefinition(raw(tags, kind))
      } catch (err) {
        caught = err
      }
      expect(isKithError(caught, 'invalid')).toBe(true)
      expect((caught as Error).message).toMatch(/^malformed: /)
      expect((caught as Error).message).toMatch(message)
    })
  }

  it('names h channels of any event, and d only for definitions', () => {
    expect(
      channelsOfEvent({
        kind: 9,
        tags: [
          ['h', 'a'],
          ['h', 'b'],
          ['h', 'a'],
          ['d', 'x'],
        ],
      }),
    ).toEqual(['a', 'b'])
  })
})

/**
 * founder → alice (owner, admin) → bob (owner) → bob's laptop → bob's agent;
 * founder → carol (owner) → carol's laptop; founder → the founder's own laptop.
 */
function world() {
  const v = new GrantVerifier({ founder: fleet, verifySignature: verifyEventSignature })
  const grant = (
    spec: Omit<GrantSpec, 'fleet' | 'proof'>,
    sk: Uint8Array,
    subjectSk: Uint8Array,
  ) => {
    const e = signGrant({ ...spec, fleet }, sk, subjectSk, now)
    expect(v.add(e)).toEqual({ status: 'accepted' })
    return e
  }
  const [alice, bob, bobLaptop, bobAgent, carol, carolLaptop, founderLaptop] = [
    key(),
    key(),
    key(),
    key(),
    key(),
    key(),
    key(),
  ] as const
  const ga = grant({ subject: alice.pk, role: 'owner', deleg: true }, founder.sk, alice.sk)
  const gb = grant({ subject: bob.pk, role: 'owner', parent: ga.id }, alice.sk, bob.sk)
  const gbl = grant(
    { subject: bobLaptop.pk, role: 'device', deleg: true, parent: gb.id },
    bob.sk,
    bobLaptop.sk,
  )
  grant({ subject: bobAgent.pk, role: 'agent', parent: gbl.id }, bobLaptop.sk, bobAgent.sk)
  const gc = grant({ subject: carol.pk, role: 'owner' }, founder.sk, carol.sk)
  grant({ subject: carolLaptop.pk, role: 'device', parent: gc.id }, carol.sk, carolLaptop.sk)
  grant({ subject: founderLaptop.pk, role: 'device' }, founder.sk, founderLaptop.sk)
  const book = new ChannelBook(v)
  const define = (
    sk: Uint8Array,
    spec: { channel?: string; creator: string; members?: string[]; private?: boolean },
    at = now,
  ) =>
    book.add(
      signEvent(
        makeChannelDefinition(
          {
            channel: spec.channel ?? 'secret',
            fleet,
            creator: spec.creator,
            private: spec.private ?? true,
            members: spec.members ?? [],
          },
          at,
        ),
        sk,
      ),
      { now },
    )
  return { v, book, define, alice, bob, bobLaptop, bobAgent, carol, carolLaptop, founderLaptop }
}

describe('ChannelBook', () => {
  it('a person covers their devices and agents; the nearest owner on the chain is the person', () => {
    const w = world()
    expect(w.define(w.carol.sk, { creator: w.carol.pk, members: [w.bob.pk] })).toEqual({
      status: 'accepted',
    })
    const member = (k: { pk: string }) => w.book.isMember(k.pk, 'secret', now)
    expect([w.bob, w.bobLaptop, w.bobAgent].map(member)).toEqual([true, true, true])
    // Alice admitted Bob, but listing Bob does not cover Alice, nor Carol (the creator) unlisted.
    expect([w.alice, w.carol, w.carolLaptop, w.founderLaptop].map(member)).toEqual([
      false,
      false,
      false,
      false,
    ])
    expect(w.book.personsOf(w.bobAgent.pk, now)).toEqual(new Set([w.bob.pk]))
    expect(w.book.personsOf(w.founderLaptop.pk, now)).toEqual(new Set([fleet]))
    // Channels without a definition, and other channels, are open.
    expect(w.book.isMember(w.carolLaptop.pk, 'general', now)).toBe(true)
    // Whoever may change it sees the definition, not the messages.
    const def = { kind: 34140, tags: [['d', 'secret']] }
    const msg = { kind: 9, tags: [['h', 'secret']] }
    expect(w.book.mayReceive([w.carolLaptop.pk], def, now)).toBe(true)
    expect(w.book.mayReceive([w.carolLaptop.pk], msg, now)).toBe(false)
    expect(w.book.mayReceive([w.founderLaptop.pk], def, now)).toBe(true)
    expect(w.book.mayReceive([w.bobLaptop.pk], msg, now)).toBe(true)
    expect(w.book.mayPost({ kind: 9, tags: [['h', 'secret']], pubkey: w.alice.pk }, now)).toEqual({
      ok: false,
      code: 'channel-not-allowed',
      reason: 'channel #secret is not allowed for this key',
    })
  })

  it('a listed key covers itself; a revoked person stops covering anything beneath', () => {
    const w = world()
    w.define(w.carol.sk, { creator: w.carol.pk, members: [w.carol.pk, w.bobLaptop.pk] })
    expect(w.book.isMember(w.bobLaptop.pk, 'secret', now)).toBe(true)
    expect(w.book.isMember(w.bobAgent.pk, 'secret', now)).toBe(false)
    // Removed after she defined it (a removal in the same second would end the definition too:
    // which came first is unknown, kith-channels "Authority").
    const rev = signEvent(makeRevocation({ fleet, keys: [w.carol.pk] }, now + 1), founder.sk)
    expect(w.v.add(rev)).toEqual({ status: 'accepted' })
    expect(w.book.isMember(w.carolLaptop.pk, 'secret', now)).toBe(false)
    // The definition itself stays in effect: the channel does not fall open.
    expect(w.book.isPrivate('secret', now)).toBe(true)
  })

  it('decides who may define, and keeps the newest definition', () => {
    const w = world()
    const refused = (r: unknown) => (r as { code?: string }).code
    expect(refused(w.define(w.bobLaptop.sk, { creator: w.bobLaptop.pk }))).toBe('not-an-owner')
    expect(refused(w.define(w.bob.sk, { creator: w.carol.pk }))).toBe('no-authority')
    expect(w.define(w.bob.sk, { creator: w.bob.pk, members: [w.bob.pk] }).status).toBe('accepted')
    // Carol is neither founder, admin nor creator, nor a member: she is told what a key whose
    // grant excludes the channel is told, nothing more.
    expect(w.define(w.carol.sk, { creator: w.bob.pk }, now + 1)).toEqual({
      status: 'rejected',
      code: 'channel-not-allowed',
      reason: 'channel #secret is not allowed for this key',
    })
    expect(refused(w.define(w.bob.sk, { creator: w.carol.pk }, now + 1))).toBe('creator-changed')
    // The creator, the admin (Alice) and the founder may.
    expect(w.define(w.bob.sk, { creator: w.bob.pk, members: [w.carol.pk] }, now + 1).status).toBe(
      'accepted',
    )
    expect(w.define(w.alice.sk, { creator: w.bob.pk, private: false }, now + 2).status).toBe(
      'accepted',
    )
    expect(w.book.isPrivate('secret', now)).toBe(false)
    expect(w.define(founder.sk, { creator: w.bob.pk, members: [w.bob.pk] }, now + 3).status).toBe(
      'accepted',
    )
    // Older than the one in effect: superseded, nothing changes.
    expect(w.define(w.bob.sk, { creator: w.bob.pk, private: false }, now - 10)).toEqual({
      status: 'superseded',
    })
    expect(w.book.definition('secret', now)?.members).toEqual([w.bob.pk])
    const other = new ChannelBook(
      new GrantVerifier({ founder: hex('f'), verifySignature: verifyEventSignature }),
    )
    const foreign = signEvent(
      makeChannelDefinition({ channel: 'x', fleet, creator: founder.pk, private: false }, now),
      founder.sk,
    )
    expect(refused(other.add(foreign))).toBe('wrong-fleet')
  })
})
