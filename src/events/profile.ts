import type { EventTemplate, NostrEvent } from './event.js'
import { Kind } from './kinds.js'

/**
 * A key's kind-0 profile (NIP-01, kith-chat/1): `{"name": <display name>, "kith": {"role":
 * "device" | "agent"}}`. A device names itself this way (its own key signs it; kith device
 * rename), and every display prefers it to a grant's name.
 */

/** The content of a device's profile: what a device compares before publishing again. */
export function deviceProfileContent(name: string): string {
  return JSON.stringify({ name, kith: { role: 'device' } })
}

/** A device's profile (kind 0, replaceable: the newest wins, so `createdAt` must be newer). */
export function makeDeviceProfile(name: string, createdAt: number): EventTemplate {
  return {
    kind: Kind.Profile,
    created_at: createdAt,
    tags: [],
    content: deviceProfileContent(name),
  }
}

/** The name a profile gives, if it is one that reads (unparseable content names nothing). */
export function profileNameIn(event: Pick<NostrEvent, 'kind' | 'content'>): string | undefined {
  if (event.kind !== Kind.Profile) return undefined
  let profile: unknown
  try {
    profile = JSON.parse(event.content)
  } catch {
    // A profile with unparseable content simply has no name.
    return undefined
  }
  if (typeof profile !== 'object' || profile === null) return undefined
  const name = (profile as { name?: unknown }).name
  return typeof name === 'string' && name !== '' ? name : undefined
}
