import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { makeGrant, signGrantProof, type Role } from '../../src/grants/grant.js'
import {
  InviterHandshake,
  JoinerHandshake,
  type Enrollment,
  type PairMessage,
  type ProtocolOptions,
} from '../../src/pairing/protocol/handshake.js'

export const now = 1_800_000_000

export function newInviter(opts: Partial<ProtocolOptions> = {}, ownerSk = generateSecretKey()) {
  const handshake = new InviterHandshake(
    { hub: 'ws://127.0.0.1:7447', owner: publicKeyOf(ownerSk), name: 'alice', role: 'device' },
    { now, ...opts },
  )
  return { handshake, ownerSk }
}

/** A real grant (with the subject's consent) from `issuerSk` to `subjectSk`. */
export function grantOf(
  issuerSk: Uint8Array,
  subjectSk: Uint8Array,
  opts: { fleet: string; role: Role; parent?: string; deleg?: boolean; name?: string },
): NostrEvent {
  const issuer = publicKeyOf(issuerSk)
  return signEvent(
    makeGrant(
      {
        subject: publicKeyOf(subjectSk),
        role: opts.role,
        fleet: opts.fleet,
        proof: signGrantProof(subjectSk, issuer, opts.role),
        ...(opts.parent === undefined ? {} : { parent: opts.parent }),
        ...(opts.deleg ? { deleg: true } : {}),
        ...(opts.name === undefined ? {} : { name: opts.name }),
      },
      now,
    ),
    issuerSk,
  )
}

/** The enrollment a founder-owner sends for the device key `deviceSk`. */
export function enrollmentFor(ownerSk: Uint8Array, deviceSk: Uint8Array): Enrollment {
  const owner = publicKeyOf(ownerSk)
  return {
    grant: grantOf(ownerSk, deviceSk, { fleet: owner, role: 'device', name: 'devbox' }),
    chain: [],
    fleet: owner,
    hubs: ['ws://127.0.0.1:7447'],
  }
}

/**
 * A fleet whose inviting owner stands `depth` owner grants below the founder (each an admin):
 * the inviter's key and the chain above it, founder first.
 */
export function deepOwner(depth: number): {
  founder: string
  ownerSk: Uint8Array
  chain: NostrEvent[]
} {
  const founderSk = generateSecretKey()
  const founder = publicKeyOf(founderSk)
  const chain: NostrEvent[] = []
  let issuerSk = founderSk
  for (let i = 0; i < depth; i++) {
    const sk = generateSecretKey()
    const g = grantOf(issuerSk, sk, {
      fleet: founder,
      role: 'owner',
      deleg: true,
      name: `admin-${i}`,
      ...(chain.length === 0 ? {} : { parent: chain[chain.length - 1]!.id }),
    })
    chain.push(g)
    issuerSk = sk
  }
  return { founder, ownerSk: issuerSk, chain }
}

/** Runs the whole protocol in memory between honest parties; returns both handshakes. */
export function honestRun(opts: Partial<ProtocolOptions> = {}, ownerSk?: Uint8Array) {
  const { handshake: inviter, ownerSk: sk } = newInviter(opts, ownerSk)
  const joiner = new JoinerHandshake(inviter.code, { now, ...opts })
  const deviceSk = generateSecretKey()
  const device = { pubkey: publicKeyOf(deviceSk), secret: deviceSk, name: 'devbox' }
  let m: PairMessage | undefined = joiner.start()
  m = inviter.handle(m, now) // nonce
  m = joiner.handle(m!, now) // reveal
  inviter.handle(m!, now)
  return { inviter, joiner, ownerSk: sk, device }
}

/** Delivers CONFIRM_I and its parts to the joiner; the result of the last one. */
export function deliver(
  joiner: JoinerHandshake,
  messages: PairMessage[],
  device: string,
): ReturnType<JoinerHandshake['accept']> {
  let result: ReturnType<JoinerHandshake['accept']>
  for (const m of messages) result = joiner.accept(m, device, now)
  return result
}
