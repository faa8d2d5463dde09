import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { makeEnvelope } from '../../src/events/e2e-envelope.js'
import { makeEpoch } from '../../src/events/e2e-epoch.js'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { FleetState } from '../../src/grants/fleet-state.js'
import { signGrant } from '../../src/grants/grant.js'
import { makeRevocation } from '../../src/grants/revocation.js'

// A reader (node, web app) takes what a since-revoked key signed while it stood, as history.
// An event that waited for its author's grant (held) must be judged the same way when it is
// retried: otherwise whether a reader shows it depends on whether it came before or after the
// grant (found by test/grants/fleet-properties.test.ts, seed -1746579271).

const now = 1_750_000_000
const key = () => {
  const sk = generateSecretKey()
  return { sk, pk: publicKeyOf(sk) }
}
const founder = key()
const fleet = founder.pk
const bob = key()

const grant = signGrant({ subject: bob.pk, role: 'owner', fleet }, founder.sk, bob.sk, now - 500)
// Bob hands #ops's first epoch to the founder while he is a member...
const envelope = signEvent(
  makeEnvelope(
    makeEpoch('ops', 0, new Uint8Array(32).fill(3)),
    founder.pk,
    bob.sk,
    fleet,
    now - 400,
  ),
  bob.sk,
)
// ...and is removed after.
const revocation = signEvent(makeRevocation({ fleet, keys: [bob.pk] }, now - 300), founder.sk)

function readerTakes(batches: NostrEvent[][]): boolean {
  const state = new FleetState({ founder: fleet, verifySignature: () => true })
  let taken = false
  for (const batch of batches)
    for (const { event, admission } of state.admitBatch(batch, now, {
      keepPending: true,
      history: true,
    }))
      if (event.id === envelope.id && admission.ok) taken = true
  return taken
}

describe('held events are judged as history when retried', () => {
  it('the grant first: the envelope is history', () => {
    expect(readerTakes([[grant, revocation], [envelope]])).toBe(true)
  })
  it('the envelope first, held until the grant comes: the same', () => {
    expect(readerTakes([[envelope], [grant, revocation]])).toBe(true)
  })
  it('a hub (no history) takes it in neither order', () => {
    for (const batches of [
      [[grant, revocation], [envelope]],
      [[envelope], [grant, revocation]],
    ]) {
      const state = new FleetState({ founder: fleet, verifySignature: () => true })
      const results = batches.flatMap((b) => state.admitBatch(b, now, { keepPending: true }))
      expect(results.find((r) => r.event.id === envelope.id)?.admission.ok).toBe(false)
    }
  })
})
