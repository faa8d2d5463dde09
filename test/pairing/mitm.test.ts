import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js'
import { publicKeyOf } from '../../src/events/event.js'
import {
  deriveKeys,
  ecdhX,
  ephemeralKey,
  transcriptHash,
} from '../../src/pairing/protocol/crypto.js'
import { PairError } from '../../src/pairing/protocol/errors.js'
import {
  JoinerHandshake,
  type PairMessage,
  type ProtocolOptions,
} from '../../src/pairing/protocol/handshake.js'
import { newInviter, now } from './helpers.js'

const failCode = (fn: () => unknown) => {
  try {
    fn()
  } catch (err) {
    if (err instanceof PairError) return err.reason
    throw err
  }
  return 'no failure'
}

describe('a man in the middle on the pairing lane', () => {
  it('who substitutes its own key (even knowing the code) gets two different SAS, every time', () => {
    for (let run = 0; run < 40; run++) {
      const { handshake: inviter } = newInviter()
      const joiner = new JoinerHandshake(inviter.code, { now }) // the real new device
      const mallory = new JoinerHandshake(inviter.code, { now }) // poses as the joiner to I
      const cR = joiner.start()
      void cR // Mallory swallows R's commitment and commits to her own key instead.
      const nonce = inviter.handle(mallory.start(), now)!
      inviter.handle(mallory.handle(nonce, now)!, now)
      joiner.handle(nonce, now) // she forwards the inviter's nonce to R
      expect(inviter.sas).not.toBe(joiner.sas)
    }
  })

  it('who only relays (no code) fails even when both people confirm blindly', () => {
    const { handshake: inviter } = newInviter()
    const joiner = new JoinerHandshake(inviter.code, { now })
    // Mallory sees the hub traffic but not the QR: she knows pid and nothing secret.
    const guessed = { ...inviter.code, qs: bytesToHex(randomBytes(16)), epkI: inviter.code.epkI }
    const mallory = new JoinerHandshake(guessed, { now })
    joiner.start()
    const nonce = inviter.handle(mallory.start(), now)!
    inviter.handle(mallory.handle(nonce, now)!, now)
    joiner.handle(nonce, now)
    // Both people press "yes" without looking.
    const deviceSk = generateSecretKey()
    const device = { pubkey: publicKeyOf(deviceSk), secret: deviceSk, name: 'devbox' }
    const malloryDevice = {
      pubkey: publicKeyOf(generateSecretKey()),
      secret: generateSecretKey(),
      name: 'x',
    }
    expect(failCode(() => inviter.handle(mallory.confirm(malloryDevice), now))).toBe('mac-failed')
    // R's own confirmation, forwarded, does not verify at I either (different keys).
    const r2 = newInviter()
    const j2 = new JoinerHandshake(r2.handshake.code, { now })
    const m2 = new JoinerHandshake(
      { ...r2.handshake.code, qs: bytesToHex(randomBytes(16)) },
      { now },
    )
    j2.start()
    const n2 = r2.handshake.handle(m2.start(), now)!
    r2.handshake.handle(m2.handle(n2, now)!, now)
    j2.handle(n2, now)
    expect(failCode(() => r2.handshake.handle(j2.confirm(device), now))).toBe('mac-failed')
    // And Mallory cannot make a CONFIRM_I that R accepts: she never had R's keys.
    const fake = { t: 'confirm-i', mac: '0'.repeat(64), box: 'AAAA' } as PairMessage
    expect(failCode(() => joiner.accept(fake, device.pubkey, now))).toBe('out-of-order')
  })
})

/**
 * The grinding game, on the test-only variant where the inviter's key travels through the relay
 * (so Mallory can sit in both exchanges and knows both SAS values), with an 8-bit SAS: she wins
 * when the two screens show the same number.
 */
function grindingTrial(opts: { commitment: boolean; maxTries: number }): boolean {
  const variant: Partial<ProtocolOptions> = {
    sasModulus: 256,
    pinInviterKey: false,
    commitment: opts.commitment,
  }
  const { handshake: inviter } = newInviter(variant)
  const code = inviter.code
  const joiner = new JoinerHandshake(code, { now, ...variant })
  // Mallory's two faces: a joiner toward I, an inviter toward R.
  const m1 = ephemeralKey(randomBytes)
  const m2 = ephemeralKey(randomBytes)
  const nI2 = bytesToHex(randomBytes(32))
  const commitR = joiner.start()
  let nM1 = bytesToHex(randomBytes(32))
  const commitM = opts.commitment
    ? (new JoinerHandshake(code, {
        now,
        ...variant,
        random: seededWith(m1.secret, nM1),
      }).start() as {
        c: string
      })
    : { c: '00'.repeat(32) }
  const nonceI = inviter.handle({ t: 'commit', c: commitM.c }, now) as { n: string; epk: string }
  const revealR = joiner.handle({ t: 'nonce', n: nI2, epk: m2.pub }, now) as {
    epk: string
    n: string
  }
  const sasR = deriveKeys(
    ecdhX(m2.secret, revealR.epk),
    code.qs,
    transcriptHash({
      ...code,
      epkI: m2.pub,
      commit: opts.commitment ? (commitR as { c: string }).c : '',
      nI: nI2,
      epkR: revealR.epk,
      nR: revealR.n,
    }),
    256,
  ).sas
  expect(joiner.sas).toBe(sasR)
  // Without a commitment she can now search for a nonce that makes I's screen match R's.
  const shared = ecdhX(m1.secret, nonceI.epk)
  const sasI = (n: string) =>
    deriveKeys(
      shared,
      code.qs,
      transcriptHash({
        ...code,
        epkI: nonceI.epk,
        commit: opts.commitment ? commitM.c : '',
        nI: nonceI.n,
        epkR: m1.pub,
        nR: n,
      }),
      256,
    ).sas
  if (!opts.commitment) {
    for (let i = 0; i < opts.maxTries && sasI(nM1) !== sasR; i++) nM1 = bytesToHex(randomBytes(32))
  }
  inviter.handle({ t: 'reveal', epk: m1.pub, n: nM1 }, now)
  return inviter.sas === sasR
}

/** A random source that yields this key, then this nonce (to rebuild Mallory's commitment). */
function seededWith(secret: Uint8Array, nonce: string) {
  const queue = [secret, Uint8Array.from(Buffer.from(nonce, 'hex'))]
  return (n: number) => queue.shift() ?? randomBytes(n)
}

describe('grinding the SAS (8-bit SAS, test-only variant)', () => {
  it('succeeds about 1 time in 256 with the commitment, and almost always without it', () => {
    const trials = 768
    let withCommit = 0
    for (let i = 0; i < trials; i++)
      if (grindingTrial({ commitment: true, maxTries: 0 })) withCommit++
    let without = 0
    const trialsWithout = 40
    for (let i = 0; i < trialsWithout; i++)
      if (grindingTrial({ commitment: false, maxTries: 5000 })) without++
    // Expected 3 of 768 with the commitment (P[≥ 12] < 1e-4); expected all 40 without.
    expect(withCommit).toBeLessThan(12)
    expect(without).toBeGreaterThanOrEqual(39)
    // ~800 protocol runs of pure crypto: seconds alone, much longer on a loaded 2-core machine.
  }, 120_000)
})
