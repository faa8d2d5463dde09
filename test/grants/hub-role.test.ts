import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { makeChannelDefinition } from '../../src/events/channel-def.js'
import { publicKeyOf, signEvent, verifyEventSignature } from '../../src/events/event.js'
import { ChannelBook } from '../../src/grants/channels.js'
import { GrantError, makeGrant, parseGrant, signGrant } from '../../src/grants/grant.js'
import { makeRevocation } from '../../src/grants/revocation.js'
import { GrantVerifier } from '../../src/grants/verifier.js'

const now = 1_800_000_000
const key = () => {
  const sk = generateSecretKey()
  return { sk, pk: publicKeyOf(sk) }
}

/** The founder, an admin owner (deleg) and a hub key. */
function fleet() {
  const founder = key()
  const admin = key()
  const hub = key()
  const v = new GrantVerifier({ founder: founder.pk, verifySignature: verifyEventSignature })
  const adminGrant = signGrant(
    { subject: admin.pk, role: 'owner', deleg: true, fleet: founder.pk },
    founder.sk,
    admin.sk,
    now - 100,
  )
  expect(v.add(adminGrant).status).toBe('accepted')
  return { founder, admin, hub, adminGrant, v }
}

describe('the hub role (kith-grants, "Hub keys")', () => {
  it('is admitted by the founder only: not by an admin owner', () => {
    const { founder, admin, hub, adminGrant, v } = fleet()
    const byAdmin = signGrant(
      { subject: hub.pk, role: 'hub', fleet: founder.pk, parent: adminGrant.id },
      admin.sk,
      hub.sk,
      now - 50,
    )
    expect(v.add(byAdmin)).toMatchObject({ status: 'rejected', code: 'no-authority' })
    const byFounder = signGrant(
      { subject: hub.pk, role: 'hub', fleet: founder.pk },
      founder.sk,
      hub.sk,
      now - 50,
    )
    expect(v.add(byFounder).status).toBe('accepted')
    expect(v.isMember(hub.pk, now)).toMatchObject({ ok: true, role: 'hub' })
  })

  it('signs nothing but AUTH, grants nothing, never delegates', () => {
    const { founder, hub, v } = fleet()
    const grant = signGrant(
      { subject: hub.pk, role: 'hub', fleet: founder.pk },
      founder.sk,
      hub.sk,
      now,
    )
    v.add(grant)
    expect(v.authorize(hub.pk, { now, kind: 9 })).toMatchObject({
      ok: false,
      code: 'kind-not-allowed',
    })
    const agent = key()
    const byHub = signGrant(
      { subject: agent.pk, role: 'agent', fleet: founder.pk, parent: grant.id },
      hub.sk,
      agent.sk,
      now,
    )
    expect(v.add(byHub)).toMatchObject({ status: 'rejected', code: 'no-authority' })
    const delegating = signEvent(
      makeGrant(
        { subject: hub.pk, role: 'hub', fleet: founder.pk, deleg: true, proof: '0'.repeat(128) },
        now,
      ),
      founder.sk,
    )
    expect(() => parseGrant(delegating)).toThrow(GrantError)
  })

  it('signs no revocation: not one that is kept as held either (found by fleet-properties)', () => {
    const { founder, admin, hub, v } = fleet()
    v.add(signGrant({ subject: hub.pk, role: 'hub', fleet: founder.pk }, founder.sk, hub.sk, now))
    // It stands above nothing, so its revocation would revoke nothing; but a hub or node kept it
    // (stored, republished, charged to no person) while the table lets a hub key sign nothing.
    for (const target of [{ keys: [admin.pk] }, { grants: ['ab'.repeat(32)] }]) {
      const rev = signEvent(makeRevocation({ fleet: founder.pk, ...target }, now), hub.sk)
      expect(v.add(rev, { keepPending: true })).toMatchObject({
        status: 'rejected',
        code: 'kind-not-allowed',
      })
      expect(v.holds(rev.id)).toBe(false)
    }
    expect(v.isMember(admin.pk, now).ok).toBe(true)
  })

  it('reads every private channel, as a hub must to replicate it', () => {
    const { founder, hub, v } = fleet()
    v.add(signGrant({ subject: hub.pk, role: 'hub', fleet: founder.pk }, founder.sk, hub.sk, now))
    const book = new ChannelBook(v)
    const stranger = key()
    const def = signEvent(
      makeChannelDefinition(
        {
          channel: 'secret',
          fleet: founder.pk,
          creator: founder.pk,
          private: true,
          members: [founder.pk],
        },
        now - 10,
      ),
      founder.sk,
    )
    expect(book.add(def, { now })).toMatchObject({ status: 'accepted' })
    expect(book.isMember(hub.pk, 'secret', now)).toBe(true)
    expect(book.isMember(stranger.pk, 'secret', now)).toBe(false)
  })
})
