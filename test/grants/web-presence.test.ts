import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { publicKeyOf, signEvent } from '../../src/events/event.js'
import { makePresence } from '../../src/events/presence.js'
import { signGrant } from '../../src/grants/grant.js'
import { FleetModel } from '../../src/web/app/lib/fleet.js'

// A newly paired page subscribes to presence before its catch-up brings the other devices'
// grants: a presence that came first is judged again once they arrive, not dropped (the Fleet
// page showed a machine that had just said it is up as "no presence seen" for a minute).

describe("the web app's presence before the grants", () => {
  it('a device heard before its grant came shows online once the grant arrives', () => {
    const key = () => {
      const sk = generateSecretKey()
      return { sk, pk: publicKeyOf(sk) }
    }
    const [founder, laptop, page] = [key(), key(), key()]
    const now = Math.floor(Date.now() / 1000)
    const grant = (k: { pk: string; sk: Uint8Array }) =>
      signGrant({ subject: k.pk, role: 'device', fleet: founder.pk }, founder.sk, k.sk, now - 100)
    const m = new FleetModel(page.pk, founder.pk, page.sk, [grant(page)])
    m.intake([signEvent(makePresence('online', [], now, 60), laptop.sk)])
    expect(m.online(laptop.pk)).toBe(false)
    m.intake([grant(laptop)])
    expect(m.online(laptop.pk)).toBe(true)
  })
})
