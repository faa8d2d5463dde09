/**
 * Stable reason codes of the grant verifier. They appear in test vectors, CLI output and (via
 * `grantCodePrefix`) in the hub's `restricted:` / `invalid:` answers.
 */
export type GrantCode =
  | 'bad-signature'
  | 'malformed'
  | 'wrong-fleet'
  | 'self-grant'
  | 'bad-proof'
  | 'missing-parent'
  | 'unknown-parent'
  | 'parent-mismatch'
  | 'no-authority'
  | 'wider-kinds'
  | 'wider-channels'
  | 'wider-window'
  | 'too-deep'
  | 'cycle'
  | 'not-a-member'
  | 'revoked'
  | 'expired'
  | 'not-yet-valid'
  | 'kind-not-allowed'
  | 'channel-not-allowed'
  | 'too-many-held'

/** Codes that say the event itself is wrong (NIP-01 `invalid:`); the rest are `restricted:`. */
const invalidCodes: ReadonlySet<GrantCode> = new Set(['bad-signature', 'malformed', 'bad-proof'])

export function grantCodePrefix(code: GrantCode): 'invalid' | 'restricted' {
  return invalidCodes.has(code) ? 'invalid' : 'restricted'
}
