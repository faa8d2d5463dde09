import type { EventTemplate, NostrEvent } from '../events/event.js'
import { isHex64 } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { GrantError } from './grant.js'

/** A parsed kind-4141 revocation: `revoker` revokes grants (`e`) and/or keys (`p`). */
export interface Revocation {
  id: string
  revoker: string
  fleet: string
  grants: string[]
  keys: string[]
  reason: string
  createdAt: number
}

/**
 * `e` and `p` tags one revocation may carry. Kith's tools name one target per revocation; the
 * bound is what a stranger to the target pays: every hub and node parses and judges every target
 * of every revocation it is sent, and a refused one of 999 keys cost a hub ~4 ms of its main
 * thread (bench:abuse, held-revocations). More targets go in several revocations.
 */
export const maxRevocationTargets = 256

export function makeRevocation(
  spec: { fleet: string; grants?: string[]; keys?: string[]; reason?: string },
  createdAt: number,
): EventTemplate {
  const tags: string[][] = [['fleet', spec.fleet]]
  for (const id of spec.grants ?? []) tags.push(['e', id])
  for (const key of spec.keys ?? []) tags.push(['p', key])
  return { kind: Kind.Revocation, created_at: createdAt, tags, content: spec.reason ?? '' }
}

export function parseRevocation(event: NostrEvent): Revocation {
  if (event.kind !== Kind.Revocation) {
    throw new GrantError('malformed', `a revocation is kind ${Kind.Revocation}`)
  }
  const fleets = event.tags.filter((t) => t[0] === 'fleet')
  const fleet = fleets[0]?.[1]
  if (fleets.length !== 1 || !isHex64(fleet)) {
    throw new GrantError('malformed', 'one fleet tag with the founder pubkey is required')
  }
  // Counted before any is checked, so an oversized one costs a pass over its tag names only.
  let targets = 0
  for (const tag of event.tags) if (tag[0] === 'e' || tag[0] === 'p') targets++
  if (targets > maxRevocationTargets) {
    throw new GrantError(
      'malformed',
      `a revocation names at most ${maxRevocationTargets} targets (e and p tags), got ${targets}; publish several`,
    )
  }
  const grants = new Set<string>()
  const keys = new Set<string>()
  for (const [name, value] of event.tags) {
    if (name !== 'e' && name !== 'p') continue
    if (!isHex64(value)) throw new GrantError('malformed', `${name} tags hold 64-hex values`)
    // Each target once: repeating one adds nothing but work for every verifier.
    ;(name === 'e' ? grants : keys).add(value)
  }
  if (grants.size + keys.size === 0) {
    throw new GrantError('malformed', 'a revocation names at least one grant (e) or key (p)')
  }
  return {
    id: event.id,
    revoker: event.pubkey,
    fleet,
    grants: [...grants],
    keys: [...keys],
    reason: event.content,
    createdAt: event.created_at,
  }
}
