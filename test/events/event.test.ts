import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { isKithError } from '../../src/errors.js'
import {
  classifyVerifyFailure,
  compareNewestFirst,
  computeEventId,
  parseEvent,
  publicKeyOf,
  replaceKey,
  signEvent,
  verifyEventSignature,
  type NostrEvent,
} from '../../src/events/event.js'
import { classifyKind, isEphemeralKind, Kind } from '../../src/events/kinds.js'
import { loadWasmVerifier, verifyWithWasm } from '../../src/verify/wasm.js'

const sk = generateSecretKey()
const template = { kind: 9, created_at: 1_700_000_000, tags: [['h', 'ops']], content: 'hi' }

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (err) {
    return isKithError(err) ? err.code : 'not-a-kith-error'
  }
  return undefined
}

describe('kinds', () => {
  it('classifies each NIP-01 range, edges included', () => {
    expect(classifyKind(0)).toBe('replaceable')
    expect(classifyKind(3)).toBe('replaceable')
    expect(classifyKind(1)).toBe('regular')
    expect(classifyKind(9999)).toBe('regular')
    expect(classifyKind(10000)).toBe('replaceable')
    expect(classifyKind(19999)).toBe('replaceable')
    expect(classifyKind(20000)).toBe('ephemeral')
    expect(classifyKind(29999)).toBe('ephemeral')
    expect(classifyKind(30000)).toBe('addressable')
    expect(classifyKind(39999)).toBe('addressable')
    expect(classifyKind(40000)).toBe('regular')
    expect(isEphemeralKind(Kind.Presence)).toBe(true)
    expect(classifyKind(Kind.Grant)).toBe('regular')
  })
})

describe('sign and verify', () => {
  it('signs without mutating the template and yields the canonical id', () => {
    const t = structuredClone(template)
    const e = signEvent(t, sk)
    expect(t).toEqual(template)
    expect(e.pubkey).toBe(publicKeyOf(sk))
    expect(e.id).toBe(computeEventId(e))
    expect(Object.keys(e).sort()).toEqual(
      ['content', 'created_at', 'id', 'kind', 'pubkey', 'sig', 'tags'].sort(),
    )
    expect(verifyEventSignature(e)).toBe(true)
  })

  it('fails closed and says which check failed', async () => {
    await loadWasmVerifier()
    const e = signEvent(template, sk)
    const tampered: NostrEvent = { ...e, content: 'changed' }
    const badSig: NostrEvent = {
      ...e,
      sig: e.sig.slice(0, -2) + (e.sig.endsWith('00') ? '01' : '00'),
    }
    const otherKey: NostrEvent = { ...e, pubkey: publicKeyOf(generateSecretKey()) }
    for (const bad of [tampered, badSig, otherKey]) {
      expect(verifyEventSignature(bad)).toBe(false)
      expect(verifyWithWasm(bad)).not.toBe('ok')
    }
    expect(verifyWithWasm(e)).toBe('ok')
    expect(classifyVerifyFailure(tampered)).toBe('bad-id')
    expect(verifyWithWasm(tampered)).toBe('bad-id')
    expect(verifyWithWasm(badSig)).toBe('bad-sig')
    // A new id computed for the tampered content still fails on the signature.
    const reId = { ...tampered, id: computeEventId(tampered) }
    expect(verifyWithWasm(reId)).toBe('bad-sig')
  })
})

describe('parseEvent', () => {
  const good = signEvent(template, sk)
  it('keeps only canonical fields', () => {
    const parsed = parseEvent({ ...good, extra: 'dropped', seenOn: ['x'] })
    expect(parsed).toEqual(good)
    expect('extra' in parsed).toBe(false)
  })
  it.each([
    ['not an object', 'x'],
    ['array', []],
    ['uppercase id', { ...good, id: good.id.toUpperCase() }],
    ['short pubkey', { ...good, pubkey: good.pubkey.slice(2) }],
    ['sig not hex', { ...good, sig: 'z'.repeat(128) }],
    ['float created_at', { ...good, created_at: 1.5 }],
    ['negative created_at', { ...good, created_at: -1 }],
    ['kind too large', { ...good, kind: 70000 }],
    ['content not string', { ...good, content: 5 }],
    ['tags not array', { ...good, tags: {} }],
    ['empty tag', { ...good, tags: [[]] }],
    ['tag item not string', { ...good, tags: [['p', 1]] }],
  ])('refuses %s with code invalid', (_name, value) => {
    expect(codeOf(() => parseEvent(value))).toBe('invalid')
  })
})

describe('ordering and replace keys', () => {
  it('orders newest first and breaks ties by lowest id', () => {
    const a = { created_at: 5, id: 'b'.repeat(64) }
    const b = { created_at: 5, id: 'a'.repeat(64) }
    const c = { created_at: 6, id: 'c'.repeat(64) }
    expect([a, b, c].sort(compareNewestFirst)).toEqual([c, b, a])
  })
  it('keys replaceable by kind+pubkey and addressable by kind+pubkey+d', () => {
    const p = 'f'.repeat(64)
    expect(replaceKey({ kind: 0, pubkey: p, tags: [] })).toBe(`0:${p}`)
    expect(replaceKey({ kind: 30000, pubkey: p, tags: [['d', 'x']] })).toBe(`30000:${p}:x`)
    expect(replaceKey({ kind: 30000, pubkey: p, tags: [] })).toBe(`30000:${p}:`)
    expect(replaceKey({ kind: 9, pubkey: p, tags: [] })).toBeUndefined()
  })
})
