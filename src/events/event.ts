import { finalizeEvent, getEventHash, getPublicKey, verifyEvent } from 'nostr-tools/pure'
import { KithError } from '../errors.js'
import { isAddressableKind, isReplaceableKind } from './kinds.js'

/** A signed NIP-01 event with exactly the seven canonical fields. */
export interface NostrEvent {
  id: string
  pubkey: string
  created_at: number
  kind: number
  tags: string[][]
  content: string
  sig: string
}

export interface EventTemplate {
  kind: number
  created_at: number
  tags: string[][]
  content: string
}

const hex64 = /^[0-9a-f]{64}$/
const hex128 = /^[0-9a-f]{128}$/

export function isHex64(value: unknown): value is string {
  return typeof value === 'string' && hex64.test(value)
}

function isUint(value: unknown, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= max
}

/**
 * Checks the NIP-01 shape of an untrusted value and returns a fresh object holding only the
 * canonical fields (unknown fields are dropped so they are never stored or relayed).
 * Throws KithError('invalid') naming the field at fault. Does not check id or signature.
 */
export function parseEvent(value: unknown): NostrEvent {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new KithError('invalid', 'event must be a JSON object')
  }
  const v = value as Record<string, unknown>
  if (!isHex64(v.id)) throw new KithError('invalid', 'id must be 64 lowercase hex characters')
  if (!isHex64(v.pubkey)) {
    throw new KithError('invalid', 'pubkey must be 64 lowercase hex characters')
  }
  if (typeof v.sig !== 'string' || !hex128.test(v.sig)) {
    throw new KithError('invalid', 'sig must be 128 lowercase hex characters')
  }
  if (!isUint(v.created_at, 0xffffffff)) {
    throw new KithError('invalid', 'created_at must be a non-negative integer (unix seconds)')
  }
  if (!isUint(v.kind, 65535)) throw new KithError('invalid', 'kind must be an integer 0-65535')
  if (typeof v.content !== 'string') throw new KithError('invalid', 'content must be a string')
  if (!Array.isArray(v.tags)) throw new KithError('invalid', 'tags must be an array')
  for (const tag of v.tags as unknown[]) {
    if (!Array.isArray(tag) || tag.length === 0) {
      throw new KithError('invalid', 'each tag must be a non-empty array of strings')
    }
    for (const item of tag as unknown[]) {
      if (typeof item !== 'string') throw new KithError('invalid', 'tag items must be strings')
    }
  }
  return {
    id: v.id,
    pubkey: v.pubkey,
    created_at: v.created_at,
    kind: v.kind,
    tags: v.tags as string[][],
    content: v.content,
    sig: v.sig,
  }
}

/** The canonical NIP-01 id (sha256 of the serialized array), as lowercase hex. */
export function computeEventId(event: Omit<NostrEvent, 'id' | 'sig'>): string {
  return getEventHash(event)
}

/** Signs a template without mutating it. The secret key never leaves this call. */
export function signEvent(template: EventTemplate, secretKey: Uint8Array): NostrEvent {
  const signed = finalizeEvent(
    {
      kind: template.kind,
      created_at: template.created_at,
      tags: template.tags.map((t) => [...t]),
      content: template.content,
    },
    secretKey,
  )
  return toCanonical(signed)
}

export function publicKeyOf(secretKey: Uint8Array): string {
  return getPublicKey(secretKey)
}

/** Pure-JS verification (id and BIP-340 signature); fails closed. Hot paths use src/verify. */
export function verifyEventSignature(event: NostrEvent): boolean {
  try {
    return verifyEvent({ ...event, tags: event.tags })
  } catch {
    // nostr-tools throws on malformed hex; a malformed event is simply not valid.
    return false
  }
}

/** Why an event failed verification: its id does not match its content, or the sig is bad. */
export function classifyVerifyFailure(event: NostrEvent): 'bad-id' | 'bad-sig' {
  return computeEventId(event) === event.id ? 'bad-sig' : 'bad-id'
}

export function toCanonical(e: NostrEvent): NostrEvent {
  return {
    id: e.id,
    pubkey: e.pubkey,
    created_at: e.created_at,
    kind: e.kind,
    tags: e.tags,
    content: e.content,
    sig: e.sig,
  }
}

/** The first value of the first tag with this name, if any. */
export function tagValue(event: Pick<NostrEvent, 'tags'>, name: string): string | undefined {
  for (const tag of event.tags) if (tag[0] === name) return tag[1]
  return undefined
}

/**
 * The key under which only the newest event is kept, or undefined for kinds that keep all:
 * `kind:pubkey` for replaceable kinds, `kind:pubkey:d` for addressable ones.
 */
export function replaceKey(
  event: Pick<NostrEvent, 'kind' | 'pubkey' | 'tags'>,
): string | undefined {
  if (isReplaceableKind(event.kind)) return `${event.kind}:${event.pubkey}`
  if (isAddressableKind(event.kind)) {
    return `${event.kind}:${event.pubkey}:${tagValue(event, 'd') ?? ''}`
  }
  return undefined
}

/** NIP-01 order: newer first; on equal created_at the lower id wins (comes first). */
export function compareNewestFirst(
  a: Pick<NostrEvent, 'created_at' | 'id'>,
  b: Pick<NostrEvent, 'created_at' | 'id'>,
): number {
  return compareNewestFirstBy(a.created_at, a.id, b.created_at, b.id)
}

/** `compareNewestFirst` on the fields themselves, for rows that are not objects. */
export function compareNewestFirstBy(
  aCreatedAt: number,
  aId: string,
  bCreatedAt: number,
  bId: string,
): number {
  if (aCreatedAt !== bCreatedAt) return bCreatedAt - aCreatedAt
  return aId < bId ? -1 : aId > bId ? 1 : 0
}
