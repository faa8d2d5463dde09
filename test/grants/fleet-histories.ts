import fc from 'fast-check'
import { generateSecretKey } from 'nostr-tools/pure'
import { makeChannelDefinition } from '../../src/events/channel-def.js'
import { makeEnvelope } from '../../src/events/e2e-envelope.js'
import { newEpoch } from '../../src/events/e2e-epoch.js'
import { makeFleetSetting } from '../../src/events/e2e-setting.js'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { Kind } from '../../src/events/kinds.js'
import { makePermissionDecision } from '../../src/events/permission-decision.js'
import { makePermissionRequest } from '../../src/events/permission-request.js'
import { signGrant, type Role } from '../../src/grants/grant.js'
import { makeRevocation } from '../../src/grants/revocation.js'

/**
 * Random fleet histories for property tests: a fixed cast of keys and a script of steps, each
 * step one real signed event (grants, revocations, channel definitions, fleet settings,
 * envelopes, chat posts, cards, decisions, profiles, session reports). Issuers and subjects are
 * drawn from the whole cast, so a history holds both what an honest fleet does and what a
 * device, an agent, a hub key, a removed person or a stranger might try.
 */

export const castNames = [
  'founder',
  'alice',
  'bob',
  'carol',
  'aliceLaptop',
  'bobLaptop',
  'aliceAgent',
  'hub',
  'stranger',
] as const
export type CastName = (typeof castNames)[number]
export interface CastKey {
  name: CastName
  sk: Uint8Array
  pk: string
}
export type Cast = Record<CastName, CastKey>

export function makeCast(): Cast {
  const out = {} as Cast
  for (const name of castNames) {
    const sk = generateSecretKey()
    out[name] = { name, sk, pk: publicKeyOf(sk) }
  }
  return out
}

export const channelNames = ['ops', 'deploy'] as const
const people: CastName[] = ['founder', 'alice', 'bob', 'carol']
const roles: Role[] = ['owner', 'device', 'agent', 'hub']

export type Step =
  | { t: 'grant'; dt: number; issuer: CastName; subject: CastName; role: Role; deleg: boolean }
  | { t: 'revoke'; dt: number; issuer: CastName; target: CastName; byKey: boolean }
  | {
      t: 'define'
      dt: number
      author: CastName
      channel: number
      private: boolean
      members: CastName[]
      creatorIsAuthor: boolean
    }
  | { t: 'setting'; dt: number; author: CastName; on: boolean }
  | { t: 'post'; dt: number; author: CastName; channel: number }
  | { t: 'envelope'; dt: number; author: CastName; channel: number; recipient: CastName }
  | { t: 'card'; dt: number; author: CastName; channel: number }
  | { t: 'decide'; dt: number; author: CastName; card: number; allow: boolean }
  | { t: 'profile'; dt: number; author: CastName }
  | { t: 'report'; dt: number; author: CastName }

const anyone = fc.constantFrom(...castNames)
const person = fc.constantFrom(...people)
// Mostly forward in time, sometimes back-dated (a date is its signer's word).
const dt = fc.integer({ min: -30, max: 60 })
const channel = fc.integer({ min: 0, max: channelNames.length - 1 })

/** The grants an honest fleet makes, so that random steps have a fleet to act in. */
const honestGrant: fc.Arbitrary<Step> = fc
  .constantFrom<[CastName, CastName, Role, boolean]>(
    ['founder', 'alice', 'owner', true],
    ['founder', 'bob', 'owner', false],
    ['founder', 'carol', 'owner', false],
    ['alice', 'carol', 'owner', false],
    ['alice', 'aliceLaptop', 'device', true],
    ['bob', 'bobLaptop', 'device', false],
    ['aliceLaptop', 'aliceAgent', 'agent', false],
    ['alice', 'aliceAgent', 'agent', false],
    ['founder', 'hub', 'hub', false],
  )
  .chain(([issuer, subject, role, deleg]) =>
    dt.map((d): Step => ({ t: 'grant', dt: d, issuer, subject, role, deleg })),
  )

/** Revocations an honest fleet makes: the founder removes anyone, people their own keys. */
const honestRevoke: fc.Arbitrary<Step> = fc
  .constantFrom<[CastName, CastName]>(
    ['founder', 'alice'],
    ['founder', 'bob'],
    ['founder', 'carol'],
    ['founder', 'aliceLaptop'],
    ['alice', 'carol'],
    ['alice', 'aliceAgent'],
    ['bob', 'bobLaptop'],
  )
  .chain(([issuer, target]) =>
    fc
      .tuple(dt, fc.boolean())
      .map(([d, byKey]): Step => ({ t: 'revoke', dt: d, issuer, target, byKey })),
  )

/** The fleet most histories start from (any of it may be missing): people, devices, an agent. */
const prelude: Step[] = (
  [
    ['founder', 'alice', 'owner', true],
    ['founder', 'bob', 'owner', false],
    ['founder', 'carol', 'owner', false],
    ['alice', 'aliceLaptop', 'device', true],
    ['bob', 'bobLaptop', 'device', false],
    ['aliceLaptop', 'aliceAgent', 'agent', false],
    ['founder', 'hub', 'hub', false],
  ] as [CastName, CastName, Role, boolean][]
).map(([issuer, subject, role, deleg]) => ({ t: 'grant', dt: 0, issuer, subject, role, deleg }))

export const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: honestGrant },
  { weight: 2, arbitrary: honestRevoke },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('grant' as const),
      dt,
      issuer: anyone,
      subject: anyone,
      role: fc.constantFrom(...roles),
      deleg: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('revoke' as const),
      dt,
      issuer: fc.oneof(person, anyone),
      target: anyone,
      byKey: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('define' as const),
      dt,
      author: fc.oneof(person, anyone),
      channel,
      private: fc.boolean(),
      members: fc.subarray<CastName>([...people, 'aliceLaptop']),
      creatorIsAuthor: fc.oneof(
        { weight: 4, arbitrary: fc.constant(true) },
        { weight: 1, arbitrary: fc.constant(false) },
      ),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('setting' as const),
      dt,
      author: anyone,
      on: fc.boolean(),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({ t: fc.constant('post' as const), dt, author: anyone, channel }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('envelope' as const),
      dt,
      author: anyone,
      channel,
      recipient: anyone,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant('card' as const), dt, author: anyone, channel }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('decide' as const),
      dt,
      author: anyone,
      card: fc.nat(),
      allow: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('profile' as const), dt, author: anyone }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('report' as const), dt, author: anyone }) },
)

export const scriptArb = (maxLength: number): fc.Arbitrary<Step[]> =>
  fc
    .tuple(fc.subarray(prelude), fc.array(stepArb, { minLength: 1, maxLength, size: 'max' }))
    .map(([start, rest]) => [...start, ...rest])

const random = (n: number) => crypto.getRandomValues(new Uint8Array(n))

/**
 * The signed events of a script, in the order it was written, dated from `start`. Each grant
 * names its issuer's newest grant so far as parent (whatever that grant's fate); a revocation by
 * grant names its target's newest grant.
 */
export function buildHistory(cast: Cast, script: readonly Step[], start: number): NostrEvent[] {
  const fleet = cast.founder.pk
  const newestGrant = new Map<string, string>()
  const cards: NostrEvent[] = []
  const out: NostrEvent[] = []
  let at = start
  for (const step of script) {
    at += step.dt
    const e = signedOnce(
      JSON.stringify([fleet, step, at, out.length, [...newestGrant], cards.map((c) => c.id)]),
      () => make(step, at),
    )
    if (step.t === 'grant') newestGrant.set(cast[step.subject].pk, e.id)
    if (step.t === 'card') cards.push(e)
    out.push(e)
  }
  return out

  function make(step: Step, at: number): NostrEvent {
    let e: NostrEvent
    switch (step.t) {
      case 'grant': {
        const issuer = cast[step.issuer]
        const subject = cast[step.subject]
        const parent = newestGrant.get(issuer.pk)
        e = signGrant(
          {
            subject: subject.pk,
            role: step.role,
            fleet,
            ...(step.deleg ? { deleg: true } : {}),
            ...(parent === undefined || issuer.pk === fleet ? {} : { parent }),
          },
          issuer.sk,
          subject.sk,
          at,
        )
        break
      }
      case 'revoke': {
        const target = cast[step.target]
        const g = newestGrant.get(target.pk)
        e = signEvent(
          makeRevocation(
            step.byKey || g === undefined ? { fleet, keys: [target.pk] } : { fleet, grants: [g] },
            at,
          ),
          cast[step.issuer].sk,
        )
        break
      }
      case 'define': {
        const author = cast[step.author]
        const creator = step.creatorIsAuthor ? author.pk : cast.alice.pk
        e = signEvent(
          makeChannelDefinition(
            {
              channel: channelNames[step.channel]!,
              fleet,
              creator,
              private: step.private,
              members: step.private ? step.members.map((m) => cast[m].pk) : [],
            },
            at,
          ),
          author.sk,
        )
        break
      }
      case 'setting':
        e = signEvent(makeFleetSetting(fleet, step.on, at), cast[step.author].sk)
        break
      case 'post':
        e = signEvent(
          {
            kind: Kind.ChatMessage,
            created_at: at,
            tags: [
              ['h', channelNames[step.channel]!],
              ['fleet', fleet],
            ],
            content: `post ${out.length}`,
          },
          cast[step.author].sk,
        )
        break
      case 'envelope':
        e = signEvent(
          makeEnvelope(
            newEpoch(channelNames[step.channel]!, 0, random),
            cast[step.recipient].pk,
            cast[step.author].sk,
            fleet,
            at,
          ),
          cast[step.author].sk,
        )
        break
      case 'card': {
        const author = cast[step.author]
        e = signEvent(
          makePermissionRequest(
            {
              channel: channelNames[step.channel]!,
              fleet,
              prompt: 'ab'.repeat(32),
              prompter: cast.alice.pk,
              title: `card ${out.length}`,
              toolKind: 'execute',
              options: [
                { optionId: 'once', name: 'Allow', kind: 'allow_once' },
                { optionId: 'no', name: 'Reject', kind: 'reject_once' },
              ],
              expires: at + 600,
              toolCallId: `t${out.length}`,
              sessionId: 's1',
              input: 'cd'.repeat(32),
              nonce: 'ef'.repeat(8),
            },
            at,
          ),
          author.sk,
        )
        break
      }
      case 'decide': {
        const card = cards[step.card % Math.max(cards.length, 1)]
        const request =
          card === undefined
            ? { id: '00'.repeat(32), channel: 'ops', agent: cast.aliceAgent.pk }
            : {
                id: card.id,
                channel: card.tags.find((t) => t[0] === 'h')![1]!,
                agent: card.pubkey,
              }
        e = signEvent(
          makePermissionDecision({ request, fleet, optionId: step.allow ? 'once' : 'no' }, at),
          cast[step.author].sk,
        )
        break
      }
      case 'profile':
        e = signEvent(
          { kind: Kind.Profile, created_at: at, tags: [], content: `{"name":"n${out.length}"}` },
          cast[step.author].sk,
        )
        break
      case 'report':
        e = signEvent(
          {
            kind: Kind.SessionState,
            created_at: at,
            tags: [
              ['d', `a:ops:${out.length}`],
              ['fleet', fleet],
            ],
            content: '{}',
          },
          cast[step.author].sk,
        )
        break
    }
    return e
  }
}

/**
 * Signing is most of a property run's time, and fast-check replays much the same steps (the
 * prelude, and every shrink): an event is signed once per cast and what it depends on.
 */
const signed = new Map<string, NostrEvent>()
function signedOnce(key: string, sign: () => NostrEvent): NostrEvent {
  let e = signed.get(key)
  if (e === undefined) {
    if (signed.size > 20_000) signed.clear()
    signed.set(key, (e = sign()))
  }
  return e
}

/** A small deterministic PRNG (mulberry32), so an order or a split is named by its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export function shuffled<T>(items: readonly T[], seed: number): T[] {
  const next = prng(seed)
  const out = [...items]
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1))
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}

/** `items` cut into consecutive batches of 1 to `max` (by seed). */
export function split<T>(items: readonly T[], seed: number, max: number): T[][] {
  const next = prng(seed)
  const out: T[][] = []
  let i = 0
  while (i < items.length) {
    const n = 1 + Math.floor(next() * max)
    out.push(items.slice(i, i + n))
    i += n
  }
  return out
}
