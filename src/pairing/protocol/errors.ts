import { KithError } from '../../errors.js'

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
  | 'cancelled'
  | 'interrupted'
  | 'hub-refused'
  | 'too-large'
  | 'unconfirmed'
  | 'locked'

const securityFailure =
  'Pairing stopped: the security check failed. Nothing was shared. Someone may be interfering; make a new code.'
const notCounted = '(not counted against the lockout)'

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
  cancelled: 'Pairing cancelled here. Nothing was shared.',
  interrupted: `Pairing stopped: the connection was interrupted ${notCounted}. Nothing was shared; make a new code.`,
  'hub-refused': `Pairing stopped: the hub refused a pairing message ${notCounted}. Nothing was shared; make a new code.`,
  'too-large': `Pairing stopped: the enrollment (grant chain and hubs) is too large for the pairing lane ${notCounted}. Nothing was shared.`,
  unconfirmed:
    'The other machine did not confirm that it received its grant, so nothing was recorded here. If it did join, it shows in kith device list once it syncs (kith up there).',
  locked:
    'Pairing is locked after 3 failed attempts in 15 minutes; re-arm it with kith pair --rearm.',
}

/**
 * Failures that count toward the lockout: the security checks a man in the middle trips, and a
 * "no" at the 6-digit comparison (from this side's person, or the other side's, authenticated).
 * Everything a hub or a network can cause on its own (refused frames, disconnects, unverified
 * aborts, junk messages, a second COMMIT, timeouts) is not counted: else a hub could lock
 * pairing at will.
 */
const counted: ReadonlySet<PairCode_> = new Set<PairCode_>([
  'commit-mismatch',
  'bad-point',
  'equal-keys',
  'mac-failed',
  'decrypt-failed',
  'bad-proof',
  'wrong-owner',
  'declined',
])

/**
 * A pairing that stopped: a KithError of code `pairing-failed` whose `reason` is the kith-pair/1
 * code (PairCode_) both screens' words come from.
 */
export class PairError extends KithError {
  override readonly name: string = 'PairError'
  declare readonly reason: PairCode_

  constructor(
    reason: PairCode_,
    /** The specific reason (a hub's refusal text, what the other side reported), shown too. */
    readonly detail = '',
    /** Reported by the other side in an authenticated abort (so it is not echoed back). */
    readonly remote = false,
  ) {
    super(
      'pairing-failed',
      detail === '' ? pairMessages[reason] : `${pairMessages[reason]}\n  reason: ${detail}`,
      { reason },
    )
  }

  /** Whether this failure counts toward the lockout (see `counted`). */
  get counts(): boolean {
    return counted.has(this.reason)
  }
}
