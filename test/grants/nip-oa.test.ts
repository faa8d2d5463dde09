import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { hexToBytes } from '@noble/hashes/utils.js'
import { publicKeyOf, signEvent } from '../../src/events/event.js'
import { authConditions, makeAuthTag, verifyAuthTag } from '../../src/grants/nip-oa.js'

const spec = JSON.parse(
  readFileSync(new URL('../vectors/nip-oa.json', import.meta.url), 'utf8'),
) as Record<string, string>

describe('NIP-OA auth tag', () => {
  it('accepts the upstream specification vector', () => {
    const agentSk = hexToBytes(spec.agent_secret!)
    expect(publicKeyOf(agentSk)).toBe(spec.agent_pubkey)
    const tag = ['auth', spec.owner_pubkey!, spec.conditions!, spec.auth_sig!]
    const event = signEvent(
      { kind: 1, created_at: 1713956999, tags: [tag], content: 'hi' },
      agentSk,
    )
    expect(verifyAuthTag(event)).toBe(spec.owner_pubkey)
    // The conditions bind: another kind, or a time past the bound, fails.
    expect(
      verifyAuthTag(
        signEvent({ kind: 9, created_at: 1713956999, tags: [tag], content: '' }, agentSk),
      ),
    ).toBeUndefined()
    expect(
      verifyAuthTag(
        signEvent({ kind: 1, created_at: 1713957000, tags: [tag], content: '' }, agentSk),
      ),
    ).toBeUndefined()
  })

  it('produces tags that verify, and fails closed on tampering', () => {
    const ownerSk = generateSecretKey()
    const agentSk = generateSecretKey()
    const conditions = authConditions({ kinds: [9, 4142], exp: 2_000_000_000 })
    expect(conditions).toBe('kind=9&kind=4142&created_at<2000000000')
    const tag = makeAuthTag(ownerSk, publicKeyOf(agentSk), conditions)
    const ev = (tags: string[][], kind = 9, sk = agentSk) =>
      signEvent({ kind, created_at: 1_900_000_000, tags, content: 'x' }, sk)
    expect(verifyAuthTag(ev([tag]))).toBe(publicKeyOf(ownerSk))
    expect(verifyAuthTag(ev([tag], 4142))).toBe(publicKeyOf(ownerSk))
    expect(verifyAuthTag(ev([tag], 1))).toBeUndefined()
    // The tag is bound to the agent key: another key cannot borrow it.
    expect(verifyAuthTag(ev([tag], 9, generateSecretKey()))).toBeUndefined()
    const badSig = [...tag.slice(0, 3), tag[3].slice(0, -1) + (tag[3].endsWith('0') ? '1' : '0')]
    expect(verifyAuthTag(ev([badSig]))).toBeUndefined()
    expect(verifyAuthTag(ev([[...tag.slice(0, 2), 'kind=9', tag[3]]]))).toBeUndefined()
    expect(verifyAuthTag(ev([[...tag.slice(0, 2), 'weird=1', tag[3]]]))).toBeUndefined()
    expect(verifyAuthTag(ev([]))).toBeUndefined()
    // Self-attestation is not an attestation.
    const self = makeAuthTag(agentSk, publicKeyOf(agentSk), '')
    expect(verifyAuthTag(ev([self]))).toBeUndefined()
  })
})
