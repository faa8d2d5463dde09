import type { GrantVerifier } from './verifier.js'

/**
 * What a hub's `restricted: revoked` for `key` is worth here (kith-hub, "AUTH"). A hub's word is
 * not a revocation: a hub that lies, or is wrong, must not retire a node's agents or make a
 * browser forget its key. It is **verified** only when this device's own grant book, which takes
 * a revocation only signed by someone with standing over the grant (kith-grants), shows every
 * grant of `key` ended now; until then it is **disputed**: the device ends that one link, says so
 * loudly, and keeps everything else.
 */
export type HubRevokedVerdict =
  { verified: true; reason: string } | { verified: false; reason: string }

export function judgeHubRevoked(
  grants: GrantVerifier,
  key: string,
  now: number,
): HubRevokedVerdict {
  const d = grants.isMember(key, now)
  if (d.ok)
    return {
      verified: false,
      reason:
        "this device's grant book shows its grant standing: no revocation of it is known here",
    }
  // A book that never held this key's grants proves nothing either way.
  if (grants.grantsOf(key).length === 0)
    return { verified: false, reason: "this device's grant book holds no grant of it" }
  return { verified: true, reason: `${d.code}: ${d.reason}` }
}
