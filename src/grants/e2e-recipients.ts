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
