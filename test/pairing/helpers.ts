import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf, signEvent } from '../../src/events/event.js'
import { makeGrant } from '../../src/grants/grant.js'
import {
  InviterSession,
  JoinerSession,
  type Enrollment,
  type PairMessage,
  type ProtocolOptions,
} from '../../src/pairing/protocol/session.js'

export const now = 1_800_000_000

export function newInviter(opts: Partial<ProtocolOptions> = {}, ownerSk = generateSecretKey()) {
  const session = new InviterSession(
    { hub: 'ws://127.0.0.1:7447', owner: publicKeyOf(ownerSk), name: 'alice', role: 'device' },
    { now, ...opts },
  )
  return { session, ownerSk }
}

export function enrollmentFor(ownerSk: Uint8Array, device: string): Enrollment {
  const owner = publicKeyOf(ownerSk)
  return {
    grant: signEvent(
      // The joiner checks who signed the grant and for whom; the subject's proof is the hub's
      // and the verifier's business (kith-grants), so any well-formed one will do here.
      makeGrant(
        { subject: device, role: 'device', fleet: owner, name: 'devbox', proof: '0'.repeat(128) },
        now,
      ),
      ownerSk,
    ),
    chain: [],
    fleet: owner,
    hubs: ['ws://127.0.0.1:7447'],
    revocations: [],
  }
}

/** Runs the whole protocol in memory between honest parties; returns both sessions. */
export function honestRun(opts: Partial<ProtocolOptions> = {}) {
  const { session: inviter, ownerSk } = newInviter(opts)
  const joiner = new JoinerSession(inviter.code, { now, ...opts })
  const deviceSk = generateSecretKey()
  const device = { pubkey: publicKeyOf(deviceSk), secret: deviceSk, name: 'devbox' }
  let m: PairMessage | undefined = joiner.start()
  m = inviter.handle(m, now) // nonce
  m = joiner.handle(m!, now) // reveal
  inviter.handle(m!, now)
  return { inviter, joiner, ownerSk, device }
}
