import { generateSecretKey } from 'nostr-tools/pure'
import { describe, expect, it } from 'vitest'
import { makeEnvelope } from '../../src/events/e2e-envelope.js'
import { newEpoch, type Epoch } from '../../src/events/e2e-epoch.js'
import { openSealed, sealedEpochId } from '../../src/events/e2e-seal.js'
import { makeFleetSetting } from '../../src/events/e2e-setting.js'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { makePermissionDecision } from '../../src/events/permission-decision.js'
import { signGrant } from '../../src/grants/grant.js'
import { makeRevocation } from '../../src/grants/revocation.js'
import type { Device } from '../../src/web/app/lib/device.js'
import { keysFrom } from '../../src/web/sw/seal.js'

const random = (n: number) => crypto.getRandomValues(new Uint8Array(n))
const t0 = Math.floor(Date.now() / 1000) - 1_000

/**
 * A fleet as a phone's service worker meets it: the owner's laptop made #ops's epoch 0 for the
 * laptop, the phone and a tablet; then the tablet was revoked and the laptop rotated to epoch 1.
 * `stale` is what the app kept before the rotation (its IndexedDB), `rotation` what a hub holds
 * since.
 */
function fleet() {
  const owner = generateSecretKey()
  const fleetKey = publicKeyOf(owner)
  const key = () => {
    const sk = generateSecretKey()
    return { sk, pk: publicKeyOf(sk) }
  }
  const laptop = key()
  const phone = key()
  const tablet = key()
  const grant = (k: { sk: Uint8Array; pk: string }, name: string) =>
    signGrant({ subject: k.pk, role: 'device', fleet: fleetKey, name }, owner, k.sk, t0)
  const phoneGrant = grant(phone, 'phone')
  const envelopes = (epoch: Epoch, to: string[], at: number, from = laptop.sk) =>
    to.map((p) => signEvent(makeEnvelope(epoch, p, from, fleetKey, at), from))
  const epoch0 = newEpoch('ops', 0, random)
  const epoch1 = newEpoch('ops', 1, random)
  const stale: NostrEvent[] = [
    grant(laptop, 'laptop'),
    grant(tablet, 'tablet'),
    signEvent(makeFleetSetting(fleetKey, true, t0), owner),
    ...envelopes(epoch0, [laptop.pk, phone.pk, tablet.pk], t0 + 1),
  ]
  const rotation: NostrEvent[] = [
    signEvent(makeRevocation({ fleet: fleetKey, keys: [tablet.pk] }, t0 + 10), owner),
    ...envelopes(epoch1, [laptop.pk, phone.pk], t0 + 11),
  ]
  const device: Device = {
    secret: phone.sk,
    record: {
      version: 1,
      pubkey: phone.pk,
      name: 'phone',
      owner: fleetKey,
      ownerName: 'owner',
      fleet: fleetKey,
      hubs: [],
      grant: phoneGrant,
      chain: [],
      pairedAt: t0,
      secret: { raw: phone.sk },
    },
  }
  const decision = makePermissionDecision(
    {
      request: { id: 'c'.repeat(64), channel: 'ops', agent: laptop.pk },
      fleet: fleetKey,
      optionId: 'allow',
    },
    t0 + 20,
  )
  return { fleetKey, laptop, phone, tablet, device, epoch0, epoch1, stale, rotation, decision }
}

describe("the service worker's seal for a notification's decision (kith-e2e/1, kith-notify/1)", () => {
  it("seals under the hub's current epoch, not the one the app last saw, so a revoked device cannot read it", () => {
    const f = fleet()
    const now = t0 + 30
    // From IndexedDB alone the worker would still use epoch 0, which the tablet holds.
    const fromApp = keysFrom(f.device, f.stale, [], now)
    expect(fromApp.seals(f.decision)).toBe(true)
    expect(sealedEpochId(fromApp.seal(f.decision).event)).toBe(f.epoch0.id)

    const keys = keysFrom(f.device, f.stale, f.rotation, now)
    const { before, event } = keys.seal(f.decision)
    expect(sealedEpochId(event)).toBe(f.epoch1.id)
    expect(before).toEqual([])
    const tabletHolds = (id: string) => (id === f.epoch0.id ? f.epoch0 : undefined)
    expect(() => openSealed(event, tabletHolds)).toThrow(/no-key/)
    const laptopHolds = (id: string) => [f.epoch0, f.epoch1].find((e) => e.id === id)
    expect(openSealed(event, laptopHolds).tags).toContainEqual(['p', f.laptop.pk])
  })

  it('takes no key from a stranger or a forged envelope', () => {
    const f = fleet()
    const stranger = generateSecretKey()
    const strangers = newEpoch('ops', 7, random)
    const fromStranger = signEvent(
      makeEnvelope(strangers, f.phone.pk, stranger, f.fleetKey, t0 + 12),
      stranger,
    )
    const forged = { ...fromStranger, pubkey: f.laptop.pk }
    const keys = keysFrom(f.device, f.stale, [...f.rotation, fromStranger, forged], t0 + 30)
    const { before, event } = keys.seal(f.decision)
    expect(sealedEpochId(event)).toBe(f.epoch1.id)
    expect(before).toEqual([])
  })

  it('rotates away from an epoch the revoked device made and sent to everyone but itself', () => {
    const f = fleet()
    // While a member, the tablet made epoch 5 and sent it to the laptop and the phone only: no
    // envelope names it, but it signed them, so it holds that key.
    const hidden = newEpoch('ops', 5, random)
    const planted = [f.laptop.pk, f.phone.pk].map((p) =>
      signEvent(makeEnvelope(hidden, p, f.tablet.sk, f.fleetKey, t0 + 5), f.tablet.sk),
    )
    const revocation = f.rotation[0]!
    // The app saw the planted epoch; the hub now has the revocation and no rotation yet.
    const keys = keysFrom(f.device, [...f.stale, ...planted], [revocation], t0 + 30)
    const { before, event } = keys.seal(f.decision)
    const used = sealedEpochId(event)
    expect([hidden.id, f.epoch0.id]).not.toContain(used)
    const tabletHolds = (id: string) => [f.epoch0, hidden].find((e) => e.id === id)
    expect(() => openSealed(event, tabletHolds)).toThrow(/no-key/)
    // The new epoch goes to the laptop and the phone, never to the tablet.
    const to = before.map((e) => e.tags.find((t) => t[0] === 'p')![1])
    expect(to.sort()).toEqual([f.laptop.pk, f.phone.pk].sort())
  })
})
