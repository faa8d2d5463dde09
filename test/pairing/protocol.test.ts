import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf } from '../../src/events/event.js'
import { decodePairingCode, encodePairingCode } from '../../src/pairing/protocol/code.js'
import { PairError } from '../../src/pairing/protocol/errors.js'
import { commitment as commitOf } from '../../src/pairing/protocol/crypto.js'
import {
  JoinerHandshake,
  parsePairMessage,
  type Enrollment,
  type PairMessage,
} from '../../src/pairing/protocol/handshake.js'
import {
  deepOwner,
  deliver,
  enrollmentFor,
  grantOf,
  honestRun,
  newInviter,
  now,
} from './helpers.js'

function code(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (err) {
    return err instanceof PairError ? err.reason : `not a PairError: ${String(err)}`
  }
  return undefined
}

describe('kith-pair/1 between honest parties', () => {
  it('gives both sides the same 6-digit SAS and enrolls the device with a grant', () => {
    const { inviter, joiner, ownerSk, device } = honestRun()
    expect(inviter.sas).toMatch(/^\d{6}$/)
    expect(joiner.sas).toBe(inviter.sas)
    const confirmR = joiner.confirm(device)
    inviter.handle(confirmR, now)
    expect(inviter.proof).toMatchObject({ device: device.pubkey, name: 'devbox' })
    const messages = inviter.finish(enrollmentFor(ownerSk, device.secret))
    expect(messages.map((m) => m.t)).toEqual(['confirm-i'])
    const { enrollment, ack } = deliver(joiner, messages, device.pubkey)!
    expect(enrollment.grant.pubkey).toBe(publicKeyOf(ownerSk))
    inviter.handle(ack, now)
    expect(inviter.done && joiner.done).toBe(true)
  })

  it('round-trips the code through its compact text form', () => {
    const { handshake } = newInviter()
    const text = encodePairingCode(handshake.code)
    expect(text).toMatch(/^kith-pair1:[A-Za-z0-9_-]+$/)
    expect(text.length).toBeLessThan(200)
    expect(decodePairingCode(text)).toEqual(handshake.code)
    expect(code(() => decodePairingCode('kith-pair1:AAAA'))).toBe('bad-code')
    expect(code(() => decodePairingCode('hello'))).toBe('bad-code')
    expect(code(() => decodePairingCode(text.slice(0, 60)))).toBe('bad-code')
  })
})

describe('kith-pair/1 refusals, each with its own code', () => {
  it('commit/reveal mismatch', () => {
    const { handshake: inviter } = newInviter()
    const joiner = new JoinerHandshake(inviter.code, { now })
    const other = new JoinerHandshake(inviter.code, { now })
    inviter.handle(joiner.start(), now)
    other.start()
    const reveal = other.handle({ t: 'nonce', n: 'aa'.repeat(32) }, now)!
    expect(code(() => inviter.handle(reveal, now))).toBe('commit-mismatch')
  })

  it('a second COMMIT (a third party joining) and messages out of order', () => {
    const { handshake: inviter } = newInviter()
    inviter.handle(new JoinerHandshake(inviter.code, { now }).start(), now)
    expect(
      code(() => inviter.handle(new JoinerHandshake(inviter.code, { now }).start(), now)),
    ).toBe('third-party')
    const { handshake: fresh } = newInviter()
    expect(
      code(() => fresh.handle({ t: 'reveal', epk: '02' + 'a'.repeat(64), n: 'b'.repeat(64) }, now)),
    ).toBe('out-of-order')
    expect(code(() => parsePairMessage({ t: 'commit', c: 'xyz' }))).toBe('out-of-order')
    expect(code(() => parsePairMessage('nope'))).toBe('out-of-order')
  })

  it('an expired code, on either side (fake clock)', () => {
    const { handshake: inviter } = newInviter()
    expect(code(() => new JoinerHandshake(inviter.code, { now: inviter.code.exp + 1 }))).toBe(
      'expired',
    )
    const joiner = new JoinerHandshake(inviter.code, { now })
    expect(code(() => inviter.handle(joiner.start(), inviter.code.exp + 1))).toBe('expired')
  })

  it('off-curve and equal keys', () => {
    const { handshake: inviter } = newInviter()
    const joiner = new JoinerHandshake(inviter.code, { now })
    inviter.handle(joiner.start(), now)
    const offCurve = '02' + 'f'.repeat(64) // x ≥ p: not a point
    // A reveal whose key is not on the curve is refused even before the commitment could match.
    const { handshake: i2 } = newInviter()
    const fakeCommit = commitOf(i2.code.pid, offCurve, 'c'.repeat(64))
    i2.handle({ t: 'commit', c: fakeCommit }, now)
    expect(code(() => i2.handle({ t: 'reveal', epk: offCurve, n: 'c'.repeat(64) }, now))).toBe(
      'bad-point',
    )
    const { handshake: i3 } = newInviter()
    i3.handle({ t: 'commit', c: commitOf(i3.code.pid, i3.code.epkI, 'd'.repeat(64)) }, now)
    expect(code(() => i3.handle({ t: 'reveal', epk: i3.code.epkI, n: 'd'.repeat(64) }, now))).toBe(
      'equal-keys',
    )
    // The joiner refuses a code whose inviter key is off the curve.
    expect(code(() => new JoinerHandshake({ ...inviter.code, epkI: offCurve }, { now }))).toBe(
      'bad-point',
    )
  })

  it('tampered ciphertext and a forged confirmation MAC', () => {
    const { inviter, joiner, device } = honestRun()
    const confirmR = joiner.confirm(device) as Extract<PairMessage, { t: 'confirm-r' }>
    const flipped =
      confirmR.box.slice(0, 20) + (confirmR.box[20] === 'A' ? 'B' : 'A') + confirmR.box.slice(21)
    expect(code(() => inviter.handle({ ...confirmR, box: flipped }, now))).toBe('decrypt-failed')
    const r2 = honestRun()
    const c2 = r2.joiner.confirm(r2.device) as Extract<PairMessage, { t: 'confirm-r' }>
    expect(code(() => r2.inviter.handle({ ...c2, mac: '0'.repeat(64) }, now))).toBe('mac-failed')
  })

  it('a proof of possession by another key', () => {
    const { inviter, joiner } = honestRun()
    const other = generateSecretKey()
    const lying = joiner.confirm({
      pubkey: publicKeyOf(generateSecretKey()),
      secret: other,
      name: 'x',
    })
    expect(code(() => inviter.handle(lying, now))).toBe('bad-proof')
  })

  it('a grant from another owner, or for another key', () => {
    const { inviter, joiner, device } = honestRun()
    inviter.handle(joiner.confirm(device), now)
    const mallory = generateSecretKey()
    const forged: Enrollment = {
      grant: grantOf(mallory, device.secret, { fleet: publicKeyOf(mallory), role: 'device' }),
      chain: [],
      fleet: publicKeyOf(mallory),
      hubs: [],
    }
    expect(code(() => deliver(joiner, inviter.finish(forged), device.pubkey))).toBe('wrong-owner')
    const r2 = honestRun()
    r2.inviter.handle(r2.joiner.confirm(r2.device), now)
    const forOther = enrollmentFor(r2.ownerSk, generateSecretKey())
    expect(code(() => deliver(r2.joiner, r2.inviter.finish(forOther), r2.device.pubkey))).toBe(
      'wrong-owner',
    )
  })

  it('a grant whose chain does not lead from the fleet to the owner', () => {
    // The inviting owner sits below the founder, but the chain sent leaves its own grant out.
    const { founder, ownerSk, chain } = deepOwner(2)
    const { inviter, joiner, device } = honestRun({}, ownerSk)
    inviter.handle(joiner.confirm(device), now)
    const grant = grantOf(ownerSk, device.secret, {
      fleet: founder,
      role: 'device',
      parent: chain[1]!.id,
    })
    const broken = { grant, chain: chain.slice(0, 1), fleet: founder, hubs: [] }
    expect(code(() => deliver(joiner, inviter.finish(broken), device.pubkey))).toBe('wrong-owner')
  })

  it('a code reused after success', () => {
    const { inviter: done, joiner, device, ownerSk } = honestRun()
    done.handle(joiner.confirm(device), now)
    done.handle(
      deliver(joiner, done.finish(enrollmentFor(ownerSk, device.secret)), device.pubkey)!.ack,
      now,
    )
    // The same code again: the inviter's handshake is finished and takes no new COMMIT.
    expect(code(() => done.handle(new JoinerHandshake(done.code, { now }).start(), now))).toBe(
      'third-party',
    )
  })
})
