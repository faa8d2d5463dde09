import { schnorr } from '@noble/curves/secp256k1.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js'
import { isHex64, verifyEventSignature, type NostrEvent } from '../events/event.js'

/**
 * NIP-OA owner attestation (block/buzz docs/nips/NIP-OA.md): `["auth", <owner>, <conditions>,
 * <sig>]` on an agent's events, where <sig> is the owner's BIP-340 signature of
 * sha256("nostr:agent-auth:<agent>:<conditions>"). Every clause of <conditions> must hold, so one
 * tag covers one kind: Kith signs one condition set per kind the agent may publish and attaches
 * to each event the set that holds for it. Third-party clients use it to show "authorized by
 * <owner>"; Kith's own authority is the grant chain.
 */
export type AuthTag = [name: 'auth', owner: string, conditions: string, sig: string]

/** NIP-OA value ranges: a kind is 0–65535, a timestamp 0–4294967295 (u32). */
export const nipOaMaxKind = 65535
export const nipOaMaxTimestamp = 4294967295

/** Why an event carries no valid attestation (stable; the vectors name these). */
export type AuthTagFailure =
  | 'no-tag'
  | 'two-tags'
  | 'wrong-length'
  | 'bad-owner'
  | 'bad-sig-hex'
  | 'malformed-conditions'
  | 'self-attestation'
  | 'conditions-unmet'
  | 'bad-signature'
  | 'bad-event'

export type AuthTagCheck = { ok: true; owner: string } | { ok: false; why: AuthTagFailure }

type Clause =
  | { kind: number }
  | { before: number } // created_at < before
  | { after: number } // created_at > after

function digest(agent: string, conditions: string): Uint8Array {
  return sha256(utf8ToBytes(`nostr:agent-auth:${agent}:${conditions}`))
}

// Canonical decimal: `0`, or no leading zero; at most as many digits as the range allows.
const clausePattern = /^(?:kind=(0|[1-9][0-9]{0,4})|created_at([<>])(0|[1-9][0-9]{0,9}))$/

/**
 * Parses a conditions string exactly as NIP-OA defines it, or undefined when it is malformed:
 * an empty clause (leading, trailing or doubled `&`), whitespace, an unknown clause, a
 * non-canonical or out-of-range number. The empty string is no clause.
 */
export function parseConditions(conditions: string): Clause[] | undefined {
  if (conditions === '') return []
  const clauses: Clause[] = []
  for (const part of conditions.split('&')) {
    const m = clausePattern.exec(part)
    if (m === null) return undefined
    if (m[1] !== undefined) {
      const kind = Number(m[1])
      if (kind > nipOaMaxKind) return undefined
      clauses.push({ kind })
    } else {
      const t = Number(m[3])
      if (t > nipOaMaxTimestamp) return undefined
      clauses.push(m[2] === '<' ? { before: t } : { after: t })
    }
  }
  return clauses
}

/** Every clause must hold (so two different `kind=` clauses never do). */
function holds(clauses: readonly Clause[], event: { kind: number; created_at: number }): boolean {
  return clauses.every((c) =>
    'kind' in c
      ? event.kind === c.kind
      : 'before' in c
        ? event.created_at < c.before
        : event.created_at > c.after,
  )
}

/**
 * The condition sets to sign for an agent whose grant allows `kinds` (undefined: any kind) from
 * `nbf` to `exp` (its effective window): one set per kind, each bounded by the window, so every
 * event the grant allows has exactly one set that holds for it. No kinds: nothing to attest.
 */
export function authConditionSets(opts: {
  kinds?: readonly number[]
  nbf?: number
  exp?: number
}): string[] {
  const window: string[] = []
  // The window is clamped into NIP-OA's range (a bound outside it would make the tag invalid).
  if (opts.nbf !== undefined && opts.nbf > 0)
    window.push(`created_at>${Math.min(opts.nbf, nipOaMaxTimestamp)}`)
  if (opts.exp !== undefined) window.push(`created_at<${Math.min(opts.exp, nipOaMaxTimestamp)}`)
  if (opts.kinds === undefined) return [window.join('&')]
  return [...new Set(opts.kinds)]
    .sort((a, b) => a - b)
    .map((k) => [`kind=${k}`, ...window].join('&'))
}

export function makeAuthTag(ownerSecret: Uint8Array, agent: string, conditions: string): AuthTag {
  if (parseConditions(conditions) === undefined) {
    throw new RangeError(`not NIP-OA conditions: ${JSON.stringify(conditions)}`)
  }
  const owner = bytesToHex(schnorr.getPublicKey(ownerSecret))
  const sig = bytesToHex(schnorr.sign(digest(agent, conditions), ownerSecret))
  return ['auth', owner, conditions, sig]
}

/**
 * Of an agent's signed tags, the one whose conditions hold for an event of `kind` made at
 * `created_at`; undefined when none does (the event then goes out without one, rather than
 * with a tag every verifier must reject).
 */
export function authTagFor(
  tags: readonly (readonly string[])[],
  event: { kind: number; created_at: number },
): string[] | undefined {
  for (const tag of tags) {
    const clauses = tag.length === 4 ? parseConditions(tag[2]!) : undefined
    if (clauses !== undefined && holds(clauses, event)) return [...tag]
  }
  return undefined
}

/**
 * Checks an event's NIP-OA attestation as the draft requires, failing closed: the event itself
 * must be valid (id and signature), carry exactly one `auth` tag of four elements, a lowercase
 * x-only owner key that is a curve point and is not the author, well-formed conditions that all
 * hold for the event, and the owner's signature over them.
 */
export function checkAuthTag(event: NostrEvent): AuthTagCheck {
  const tags = event.tags.filter((t) => t[0] === 'auth')
  if (tags.length === 0) return { ok: false, why: 'no-tag' }
  if (tags.length > 1) return { ok: false, why: 'two-tags' }
  const tag = tags[0]!
  if (tag.length !== 4) return { ok: false, why: 'wrong-length' }
  const [, owner, conditions, sig] = tag as AuthTag
  if (!isHex64(owner)) return { ok: false, why: 'bad-owner' }
  try {
    schnorr.utils.lift_x(BigInt(`0x${owner}`))
  } catch {
    // Not the x coordinate of a curve point: no key could have signed for it.
    return { ok: false, why: 'bad-owner' }
  }
  if (typeof sig !== 'string' || !/^[0-9a-f]{128}$/.test(sig))
    return { ok: false, why: 'bad-sig-hex' }
  const clauses = typeof conditions === 'string' ? parseConditions(conditions) : undefined
  if (clauses === undefined) return { ok: false, why: 'malformed-conditions' }
  if (owner === event.pubkey) return { ok: false, why: 'self-attestation' }
  if (!verifyEventSignature(event)) return { ok: false, why: 'bad-event' }
  if (!holds(clauses, event)) return { ok: false, why: 'conditions-unmet' }
  let valid: boolean
  try {
    valid = schnorr.verify(hexToBytes(sig), digest(event.pubkey, conditions), hexToBytes(owner))
  } catch {
    // A signature that does not even parse is not a valid one.
    valid = false
  }
  return valid ? { ok: true, owner } : { ok: false, why: 'bad-signature' }
}

/** The owner an event's NIP-OA tag attests, or undefined when it has no valid one. */
export function verifyAuthTag(event: NostrEvent): string | undefined {
  const r = checkAuthTag(event)
  return r.ok ? r.owner : undefined
}
