import { currentEpoch, maxEpochNumber } from './e2e-epoch.js'

/** An epoch as the members of a channel can all see it: its id, number, and who was sent it. */
export interface EpochView {
  id: string
  number: number
  /** The keys an envelope of this epoch was addressed to (their `p` tags), as seen so far. */
  holders: ReadonlySet<string>
  /**
   * Of those, the keys known to hold it (not only claimed by another's envelope); absent: all of
   * `holders`. Only these are not sent it again.
   */
  sure?: ReadonlySet<string>
  /** When it began, as far as this member knows (Epoch.since); unknown: it does not age. */
  since?: number
}

/**
 * What a member does before sealing into a channel (kith-e2e/1, "Rotation"):
 * - `create`: no epoch is known: make epoch 0 and send it to every member key;
 * - `rotate`: a key that holds the current epoch is no longer a member (removed, revoked, or
 *   dropped from a private channel's list): make epoch `number` = current + 1, send it to the
 *   remaining member keys, and seal under it. Whoever sends next rotates; concurrent rotations
 *   make two epochs of one number, and `currentEpoch` (lowest id) picks the same one everywhere;
 *   A key that lacks the current epoch and may read no history (`joinsFresh`: an agent a device
 *   granted) rotates too (`joined`): it is never handed an epoch that sealed messages from before
 *   it arrived;
 * - `rotate` also when the current epoch began `age.every` seconds or more ago (`aged`: periodic
 *   rotation, so one leaked key opens a bounded window);
 * - `use`: seal under the current epoch, after sending it to `missing` (member keys not known to
 *   hold it yet: a new member, device or agent, or one only another's envelope claims holds it).
 */
export type SealPlan =
  | { action: 'create'; number: 0 }
  | { action: 'rotate'; number: number; removed: string[]; joined: string[]; aged?: true }
  | { action: 'use'; epochId: string; missing: string[] }

export function sealPlan(
  epochs: Iterable<EpochView>,
  members: readonly string[],
  isMember: (key: string) => boolean,
  joinsFresh: (key: string) => boolean,
  /** Periodic rotation: an epoch begun `every` seconds or more before `now` is replaced. */
  age?: { now: number; every: number },
): SealPlan {
  const current = currentEpoch(epochs)
  if (current === undefined) return { action: 'create', number: 0 }
  const removed = [...current.holders].filter((k) => !isMember(k)).sort()
  // At the bound, another epoch of the same number: it is sealed under all the same.
  const next = Math.min(current.number + 1, maxEpochNumber)
  // Claims decide who joined (another device may have sent it already); only keys known to hold
  // the epoch are spared an envelope.
  const joined = members.filter((k) => !current.holders.has(k) && joinsFresh(k)).sort()
  if (removed.length > 0 || joined.length > 0)
    return { action: 'rotate', number: next, removed, joined }
  if (age !== undefined && current.since !== undefined && age.now - current.since >= age.every)
    return { action: 'rotate', number: next, removed, joined, aged: true }
  const missing = members.filter((k) => !(current.sure ?? current.holders).has(k))
  return { action: 'use', epochId: current.id, missing }
}
