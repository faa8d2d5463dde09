import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { hexToBytes } from '@noble/hashes/utils.js'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import {
  authConditionSets,
  authTagFor,
  checkAuthTag,
  makeAuthTag,
  verifyAuthTag,
} from '../../src/grants/nip-oa.js'

const spec = JSON.parse(
  readFileSync(new URL('../vectors/nip-oa.json', import.meta.url), 'utf8'),
) as {
  owner_pubkey: string
  agent_pubkey: string
  agent_secret: string
  conditions: string
  auth_sig: string
  valid: { description: string; event: NostrEvent; owner: string }[]
  invalid: { description: string; why: string; event: NostrEvent }[]
  condition_sets: {
    description: string
    grant: { kinds?: number[]; nbf?: number; exp?: number }
    sets: string[]
  }[]
}

describe('NIP-OA auth tag (test/vectors/nip-oa.json)', () => {
  it('accepts the upstream specification vector', () => {
    const agentSk = hexToBytes(spec.agent_secret)
    expect(publicKeyOf(agentSk)).toBe(spec.agent_pubkey)
    const tag = ['auth', spec.owner_pubkey, spec.conditions, spec.auth_sig]
    const event = signEvent(
      { kind: 1, created_at: 1713956999, tags: [tag], content: 'hi' },
      agentSk,
    )
    expect(verifyAuthTag(event)).toBe(spec.owner_pubkey)
  })

  it.each(spec.valid.map((v) => [v.description, v] as const))('valid: %s', (_d, v) => {
    expect(checkAuthTag(v.event)).toEqual({ ok: true, owner: v.owner })
  })

  it.each(spec.invalid.map((v) => [`${v.why}: ${v.description}`, v] as const))(
    'invalid: %s',
    (_d, v) => {
      expect(checkAuthTag(v.event)).toEqual({ ok: false, why: v.why })
      expect(verifyAuthTag(v.event)).toBeUndefined()
    },
  )

  it('names every refusal reason at least once in the vectors', () => {
    expect(new Set(spec.invalid.map((v) => v.why))).toEqual(
      new Set([
        'no-tag',
        'two-tags',
        'wrong-length',
        'bad-owner',
        'bad-sig-hex',
        'malformed-conditions',
        'self-attestation',
        'conditions-unmet',
        'bad-signature',
        'bad-event',
      ]),
    )
  })

  it.each(spec.condition_sets.map((c) => [c.description, c] as const))(
    'condition sets: %s',
    (_d, c) => {
      expect(authConditionSets(c.grant)).toEqual(c.sets)
    },
  )
})

describe('NIP-OA tags Kith signs for an agent', () => {
  it('one tag per allowed kind, and each event carries the one that holds for it', () => {
    const ownerSk = generateSecretKey()
    const agentSk = generateSecretKey()
    const agent = publicKeyOf(agentSk)
    const tags = authConditionSets({ kinds: [9, 4142], exp: 2_000_000_000 }).map((c) =>
      makeAuthTag(ownerSk, agent, c),
    )
    expect(tags.map((t) => t[2])).toEqual([
      'kind=9&created_at<2000000000',
      'kind=4142&created_at<2000000000',
    ])
    const publish = (kind: number, created_at: number) => {
      const auth = authTagFor(tags, { kind, created_at })
      return signEvent(
        { kind, created_at, tags: auth === undefined ? [] : [auth], content: 'x' },
        agentSk,
      )
    }
    expect(verifyAuthTag(publish(9, 1_900_000_000))).toBe(publicKeyOf(ownerSk))
    expect(verifyAuthTag(publish(4142, 1_900_000_000))).toBe(publicKeyOf(ownerSk))
    // A kind the grant does not allow, or a time past its expiry: no tag is attached at all
    // (an attached tag would be one every verifier must reject).
    expect(publish(1, 1_900_000_000).tags).toEqual([])
    expect(publish(9, 2_000_000_000).tags).toEqual([])
    // The tag is bound to the agent key: another key cannot borrow it.
    const borrowed = signEvent(
      { kind: 9, created_at: 1_900_000_000, tags: [tags[0]!], content: 'x' },
      generateSecretKey(),
    )
    expect(checkAuthTag(borrowed)).toEqual({ ok: false, why: 'bad-signature' })
  })

  it('refuses to sign conditions that are not NIP-OA', () => {
    const sk = generateSecretKey()
    expect(() => makeAuthTag(sk, publicKeyOf(sk), 'kind=09')).toThrow(/not NIP-OA conditions/)
    expect(() => makeAuthTag(sk, publicKeyOf(sk), 'kind=9&')).toThrow(/not NIP-OA conditions/)
  })
})
