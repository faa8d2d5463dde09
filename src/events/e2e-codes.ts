import { KithError, type KithErrorCode } from '../errors.js'

/**
 * Why a sealed event or a key envelope was refused (kith-e2e/1, "Refusals"). Each is the
 * `reason` of a KithError; its `code` is the wire prefix it maps to. Nothing refused is ever
 * shown as if it were the real thing: a node keeps the event sealed and says which of these.
 */
export const e2eReasons = {
  /** Tags or content not of the kith-e2e/1 form (no `e2e` tag, bad JSON inside, bad key). */
  malformed: 'invalid',
  /** The ciphertext does not authenticate under the epoch's key (changed, or made with another). */
  tampered: 'invalid',
  /** The plaintext names another author, kind, time, channel or fleet than the signed event. */
  misbound: 'invalid',
  /** The envelope's signature is not its author's (id or sig wrong). */
  forged: 'invalid',
  /** The envelope is addressed to another key than the one opening it. */
  misaddressed: 'restricted',
  /** The key inside an envelope is not the key of the epoch the envelope names. */
  'wrong-epoch': 'invalid',
  /** The envelope's author may not hand out keys of this channel (not a member when signed). */
  'not-a-member': 'restricted',
  /** No key of this epoch is held here (yet): the event stays sealed until one arrives. */
  'no-key': 'not-found',
  /** A sealed kind in the clear, into a channel, dated while the fleet sealed: never taken on. */
  plaintext: 'invalid',
} as const satisfies Record<string, KithErrorCode>

export type E2eReason = keyof typeof e2eReasons

/** A KithError for an e2e refusal: the code its reason maps to, the reason as `reason`. */
export function e2eError(reason: E2eReason, message: string, cause?: unknown): KithError {
  return new KithError(e2eReasons[reason], `${reason}: ${message}`, {
    reason,
    ...(cause === undefined ? {} : { cause }),
  })
}
