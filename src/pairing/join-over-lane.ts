import { normalizeRelayUrl } from '../events/nip42.js'
import type { PairingCode } from './protocol/code.js'
import { PairError } from './protocol/errors.js'
import { JoinerHandshake, type Enrollment } from './protocol/handshake.js'
import type { RelayPairingLane } from './relay-lane.js'

/** What the joiner's screen does during a pairing (a terminal, a browser page). */
export interface JoinerScreen {
  /** Shows the 6 digits and resolves with the person's answer: the same on both screens? */
  compare(sas: string): Promise<boolean>
  /** The device key whose possession is proven, and the name it proposes. */
  key(): { pubkey: string; secret: Uint8Array; name: string }
  /** Stores what was received; runs before the acknowledgement is sent. */
  enroll(enrollment: Enrollment, hubs: string[]): Promise<void> | void
}

/** How long the inviter's person may take to answer after ours did (kith-pair/1). */
const inviterAnswerMs = 120_000

/**
 * The joiner's side of kith-pair/1 over a lane already open on the code's hub: commit, reveal
 * after the nonce, show the 6 digits, prove the key after a yes, accept the grant, store it,
 * acknowledge. Any PairError is sent to the other side as an abort (the same words on both
 * screens) and rethrown; the lane is closed either way. Returns the hubs to use (the code's
 * first, then the enrollment's).
 */
export async function joinOverLane(
  code: PairingCode,
  lane: RelayPairingLane,
  screen: JoinerScreen,
  clock: () => number = () => Math.floor(Date.now() / 1000),
): Promise<{ enrollment: Enrollment; hubs: string[] }> {
  let handshake: JoinerHandshake | undefined
  try {
    handshake = new JoinerHandshake(code, { now: clock() })
    const untilExpiry = () => Math.max(1, (code.exp - clock()) * 1000)
    await lane.send(handshake.start())
    const reveal = handshake.handle(await lane.next(untilExpiry()), clock())
    if (reveal) await lane.send(reveal)
    if (!(await screen.compare(handshake.sas!))) throw new PairError('declined')
    const key = screen.key()
    await lane.send(handshake.confirm(key))
    // CONFIRM_I, then the enrollment's further parts, if any.
    let done = handshake.accept(await lane.next(inviterAnswerMs), key.pubkey, clock())
    while (done === undefined) {
      done = handshake.accept(await lane.next(inviterAnswerMs), key.pubkey, clock())
    }
    const { enrollment, ack } = done
    const hubs = [...new Set([code.hub, ...enrollment.hubs].map(normalizeRelayUrl))]
    await screen.enroll(enrollment, hubs)
    await lane.send(ack)
    return { enrollment, hubs }
  } catch (err) {
    // An abort from the other side needs no answer; anything else is told to it, with the reason.
    if (handshake !== undefined && !(err instanceof PairError && err.remote)) {
      await lane.abort(
        err instanceof PairError
          ? handshake.abort(err.reason, err.detail)
          : handshake.abort('aborted', err instanceof Error ? err.message : String(err)),
      )
    }
    throw err
  } finally {
    lane.close()
  }
}
