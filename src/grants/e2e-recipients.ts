import type { ChannelBook } from './channels.js'
import type { GrantVerifier } from './verifier.js'

/**
 * Who holds a channel's keys (kith-e2e/1, Envelopes): a key is a reader of `channel` at `now`
 * when it is a member of the fleet (`self`, the key asking, always counts: a device judging its
 * own standing has its own view) and of the channel (kith-channels/1 Members).
 */
export function isE2eReader(
  grants: GrantVerifier,
  channels: ChannelBook,
  key: string,
  channel: string,
  now: number,
  self?: string,
): boolean {
  return (key === self || grants.isMember(key, now).ok) && channels.isMember(key, channel, now)
}

/**
 * The keys an epoch of `channel` goes to: every device and agent key that reads it now, and
 * `self`. Person (owner) keys sign authority, not chat; hub keys are never sent keys. Sorted.
 */
export function e2eRecipients(
  grants: GrantVerifier,
  channels: ChannelBook,
  channel: string,
  now: number,
  self: string,
): string[] {
  const keys = new Set<string>([self])
  for (const g of grants.allGrants())
    if (
      (g.role === 'device' || g.role === 'agent') &&
      isE2eReader(grants, channels, g.subject, channel, now, self)
    )
      keys.add(g.subject)
  return [...keys].sort()
}

/**
 * How much of a channel's past a member key is sent (kith-e2e/1, "New members and new devices"):
 * - `all`: a device. Only a person key grants devices (after the SAS check of kith-pair/1), so
 *   a device is its person's own choice, and its person's history follows it;
 * - `current`: an agent a person key granted (the owner, an admin, the founder): the epoch in
 *   use when it is shared, never a superseded one;
 * - `none`: an agent a device granted (kith agent add on a machine without the owner key). A
 *   device's key is only as safe as the machine or browser that holds it, and a key it mints
 *   must not become that person's whole history: such a key joins at a new epoch (Rotation).
 * The most any of the key's valid chains gives; `none` for a key that is not a member now.
 */
export type HistoryShare = 'all' | 'current' | 'none'

export function historyShare(grants: GrantVerifier, key: string, now: number): HistoryShare {
  let best: HistoryShare = 'none'
  for (const chain of grants.validChains(key, now)) {
    const own = chain.at(-1)
    if (own === undefined) continue
    if (own.role === 'device') return 'all'
    const issuer = chain.length >= 2 ? chain.at(-2)!.role : 'founder'
    if (own.role === 'agent' && (issuer === 'owner' || issuer === 'founder')) best = 'current'
  }
  return best
}
