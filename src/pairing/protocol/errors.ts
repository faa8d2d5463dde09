/** Stable codes of kith-pair/1 failures; each maps to the words both screens show. */
export type PairCode_ =
  | 'bad-code'
  | 'expired'
  | 'reused'
  | 'out-of-order'
  | 'commit-mismatch'
  | 'bad-point'
  | 'equal-keys'
  | 'mac-failed'
  | 'decrypt-failed'
  | 'bad-proof'
  | 'wrong-owner'
  | 'third-party'
  | 'declined'
  | 'timeout'
  | 'aborted'
  | 'locked'

const securityFailure =
  'Pairing stopped: the security check failed. Nothing was shared. Someone may be interfering; make a new code.'

/** The same plain words on both screens (PAIRING.md), and no "continue anyway". */
export const pairMessages: Record<PairCode_, string> = {
  'bad-code': 'This is not a kith pairing code; check that it was copied whole.',
  expired: 'This code expired; make a new one.',
  reused: 'This code was already used; make a new one.',
  'out-of-order': securityFailure,
  'commit-mismatch': securityFailure,
  'bad-point': securityFailure,
  'equal-keys': securityFailure,
  'mac-failed': securityFailure,
  'decrypt-failed': securityFailure,
  'bad-proof': securityFailure,
  'wrong-owner': securityFailure,
  'third-party': 'Another device tried to use this code; cancelled for safety.',
  declined: 'Pairing cancelled: the codes were not confirmed on both screens. Nothing was shared.',
  timeout: 'Pairing timed out; nothing was shared. Make a new code.',
  aborted: 'Pairing cancelled by the other side. Nothing was shared.',
  locked:
    'Pairing is locked after 3 failed attempts in 15 minutes; re-arm it with kith pair --rearm.',
}

export class PairError extends Error {
  override readonly name = 'PairError'
  constructor(
    readonly code: PairCode_,
    readonly detail = '',
  ) {
    super(pairMessages[code])
  }
}
