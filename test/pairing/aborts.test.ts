import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { signEvent } from '../../src/events/event.js'
import { Kind } from '../../src/events/kinds.js'
import { defaultLaneLimits } from '../../src/hub/pairing-lane.js'
import { PairError, type PairCode_ } from '../../src/pairing/protocol/errors.js'
import { maxEnrollmentParts } from '../../src/pairing/protocol/limits.js'
import type { PairMessage } from '../../src/pairing/protocol/handshake.js'
import { deepOwner, enrollmentFor, grantOf, honestRun, newInviter, now } from './helpers.js'

function failure(fn: () => unknown): PairError {
  try {
    fn()
  } catch (err) {
    if (err instanceof PairError) return err
    throw err
  }
  throw new Error('no failure')
}

/** The kind-24140 frame the channel sends for `m`, as the hub's lane measures it. */
function laneFrame(m: PairMessage): string {
  const event = signEvent(
    {
      kind: Kind.Pairing,
      created_at: now,
      tags: [['d', 'ab'.repeat(16)]],
      content: JSON.stringify(m),
    },
    generateSecretKey(),
  )
  return JSON.stringify(['EVENT', event])
}

describe('aborts once the keys exist are authenticated', () => {
  it("shows the other side's own reason, and counts a 'no' at the comparison", () => {
    const { inviter, joiner } = honestRun()
    const e = failure(() => inviter.handle(joiner.abort('declined'), now))
    expect(e).toMatchObject({
      code: 'pairing-failed',
      reason: 'declined',
      remote: true,
      counts: true,
    })
    expect(e.message).toMatch(/^Pairing cancelled: the codes were not confirmed on both screens/)
    // Ctrl-C there is "cancelled by the other side" here, and not counted.
    const r2 = honestRun()
    expect(failure(() => r2.joiner.handle(r2.inviter.abort('cancelled'), now))).toMatchObject({
      code: 'pairing-failed',
      reason: 'aborted',
      remote: true,
      counts: false,
    })
    // A hub refusal on the other side reaches this side with the hub's own words.
    const r3 = honestRun()
    const refused = failure(() =>
      r3.inviter.handle(
        r3.joiner.abort('hub-refused', 'invalid: pairing frames are at most 4096 bytes'),
        now,
      ),
    )
    expect(refused).toMatchObject({ code: 'pairing-failed', reason: 'hub-refused', counts: false })
    expect(refused.message).toContain(
      'reason: on the other machine: invalid: pairing frames are at most 4096 bytes',
    )
  })

  it('a hub cannot forge, alter or reflect one: it is only an interruption, never counted', () => {
    const { inviter, joiner } = honestRun()
    // Injected by the hub, with no MAC (the old wire form): the claimed reason is shown as such.
    const injected = failure(() => inviter.handle({ t: 'abort', reason: 'mac-failed' }, now))
    expect(injected).toMatchObject({
      code: 'pairing-failed',
      reason: 'interrupted',
      counts: false,
      remote: false,
    })
    expect(injected.message).toMatch(/not counted against the lockout/)
    expect(injected.message).toContain('an unverified abort arrived (mac-failed)')
    // A made-up MAC.
    expect(
      failure(() => inviter.handle({ t: 'abort', reason: 'declined', mac: '1'.repeat(64) }, now))
        .reason,
    ).toBe('interrupted')
    // A real abort with its reason or detail changed on the way.
    const real = joiner.abort('aborted', 'ctrl-c') as Extract<PairMessage, { t: 'abort' }>
    expect(failure(() => inviter.handle({ ...real, reason: 'mac-failed' }, now)).reason).toBe(
      'interrupted',
    )
    expect(failure(() => inviter.handle({ ...real, detail: 'other words' }, now)).reason).toBe(
      'interrupted',
    )
    // The inviter's own abort sent back to it.
    const r2 = honestRun()
    expect(failure(() => r2.inviter.handle(r2.inviter.abort('declined'), now)).reason).toBe(
      'interrupted',
    )
  })

  it('before the keys exist there is nothing to authenticate with: an interruption', () => {
    const { handshake: inviter } = newInviter()
    expect(failure(() => inviter.handle({ t: 'abort', reason: 'declined' }, now))).toMatchObject({
      code: 'pairing-failed',
      reason: 'interrupted',
      counts: false,
    })
    expect(inviter.abort('timeout')).toEqual({ t: 'abort', reason: 'timeout' })
  })

  it('counts toward the lockout only security failures and a no at the comparison', () => {
    const counted: PairCode_[] = [
      'commit-mismatch',
      'bad-point',
      'equal-keys',
      'mac-failed',
      'decrypt-failed',
      'bad-proof',
      'wrong-owner',
      'declined',
    ]
    const notCounted: PairCode_[] = [
      'out-of-order',
      'third-party',
      'timeout',
      'expired',
      'reused',
      'aborted',
      'cancelled',
      'interrupted',
      'hub-refused',
      'too-large',
      'unconfirmed',
    ]
    for (const c of counted) expect(new PairError(c).counts, c).toBe(true)
    for (const c of notCounted) expect(new PairError(c).counts, c).toBe(false)
  })
})

describe('the enrollment: only the grant, the chain above it and the hubs', () => {
  it('a chain at the maximum depth travels in parts, each within the lane frame', () => {
    // Five owner grants below the founder, then the device: a chain of 6, the deepest allowed.
    const { founder, ownerSk, chain } = deepOwner(5)
    const { inviter, joiner, device } = honestRun({}, ownerSk)
    inviter.handle(joiner.confirm(device), now)
    const grant = grantOf(ownerSk, device.secret, {
      fleet: founder,
      role: 'device',
      parent: chain[4]!.id,
      name: 'devbox',
    })
    const hubs = ['wss://hub.example.org', 'wss://backup.example.org']
    const messages = inviter.finish({ grant, chain, fleet: founder, hubs })
    expect(messages.length).toBeGreaterThan(1)
    expect(messages.map((m) => m.t)).toEqual(['confirm-i', ...messages.slice(1).map(() => 'part')])
    for (const m of messages)
      expect(Buffer.byteLength(laneFrame(m))).toBeLessThanOrEqual(defaultLaneLimits.maxFrameBytes)
    // The joiner needs every part; the last one completes it.
    for (const m of messages.slice(0, -1))
      expect(joiner.accept(m, device.pubkey, now)).toBe(undefined)
    const done = joiner.accept(messages[messages.length - 1]!, device.pubkey, now)!
    expect(done.enrollment).toEqual({ grant, chain, fleet: founder, hubs })
    inviter.handle(done.ack, now)
    expect(inviter.done && joiner.done).toBe(true)
  })

  it('parts out of order, repeated or from another pairing are refused', () => {
    const setup = () => {
      const { founder, ownerSk, chain } = deepOwner(4)
      const run = honestRun({}, ownerSk)
      run.inviter.handle(run.joiner.confirm(run.device), now)
      const grant = grantOf(ownerSk, run.device.secret, {
        fleet: founder,
        role: 'device',
        parent: chain[3]!.id,
      })
      return { ...run, messages: run.inviter.finish({ grant, chain, fleet: founder, hubs: [] }) }
    }
    const a = setup()
    expect(a.messages.length).toBeGreaterThanOrEqual(3)
    const [first, second, third] = a.messages
    a.joiner.accept(first!, a.device.pubkey, now)
    expect(failure(() => a.joiner.accept(third!, a.device.pubkey, now)).reason).toBe('out-of-order')
    const b = setup()
    b.joiner.accept(b.messages[0]!, b.device.pubkey, now)
    b.joiner.accept(b.messages[1]!, b.device.pubkey, now)
    expect(failure(() => b.joiner.accept(b.messages[1]!, b.device.pubkey, now)).reason).toBe(
      'out-of-order',
    )
    const c = setup()
    c.joiner.accept(c.messages[0]!, c.device.pubkey, now)
    expect(failure(() => c.joiner.accept(second!, c.device.pubkey, now)).reason).toBe(
      'decrypt-failed',
    )
    // A part before CONFIRM_I.
    const d = setup()
    expect(failure(() => d.joiner.accept(d.messages[1]!, d.device.pubkey, now)).reason).toBe(
      'out-of-order',
    )
  })

  it('does not grow with the fleet history, and refuses (uncounted) what cannot fit', () => {
    const { inviter, joiner, ownerSk, device } = honestRun()
    inviter.handle(joiner.confirm(device), now)
    // A founder's device enrollment: one grant and the hubs, one message whatever the fleet's
    // past (revocations are synced from the hub afterwards, never carried here).
    const e = enrollmentFor(ownerSk, device.secret)
    expect(Object.keys(e).sort()).toEqual(['chain', 'fleet', 'grant', 'hubs'])
    const r2 = honestRun()
    r2.inviter.handle(r2.joiner.confirm(r2.device), now)
    const huge = {
      ...enrollmentFor(r2.ownerSk, r2.device.secret),
      hubs: Array.from({ length: 1000 }, (_, i) => `wss://hub-${i}.example.org/some/long/path`),
    }
    const tooLarge = failure(() => r2.inviter.finish(huge))
    expect(tooLarge).toMatchObject({ code: 'pairing-failed', reason: 'too-large', counts: false })
    expect(tooLarge.detail).toMatch(new RegExp(`at most ${maxEnrollmentParts}`))
  })
})
