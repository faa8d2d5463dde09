import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { makeChannelDefinition } from '../../src/events/channel-def.js'
import { makeEnvelope } from '../../src/events/e2e-envelope.js'
import { makeEpoch } from '../../src/events/e2e-epoch.js'
import { makeFleetSetting } from '../../src/events/e2e-setting.js'
import {
  publicKeyOf,
  signEvent,
  verifyEventSignature,
  type NostrEvent,
} from '../../src/events/event.js'
import { Kind } from '../../src/events/kinds.js'
import { FleetState } from '../../src/grants/fleet-state.js'
import { signGrant } from '../../src/grants/grant.js'

// kith-e2e/1 and kith-channels/1: a node takes a fleet's authority in whatever batches and order
// its links hand it over (a catch-up pages newest first). Every split of a small history into
// batches, in every order, must leave one state: definitions and envelopes whose author's grant
// comes in a later batch are held and retried as grants are, never dropped (issue 29, item 6).

const now = 1_750_000_000
const key = () => {
  const sk = generateSecretKey()
  return { sk, pk: publicKeyOf(sk) }
}
const founder = key()
const fleet = founder.pk
const admin = key()
const device = key()

// The founder makes an admin; the admin pairs a device.
const adminGrant = signGrant(
  { subject: admin.pk, role: 'owner', fleet, deleg: true, name: 'admin' },
  founder.sk,
  admin.sk,
  now - 500,
)
const history: NostrEvent[] = [
  adminGrant,
  signGrant(
    { subject: device.pk, role: 'device', fleet, parent: adminGrant.id },
    admin.sk,
    device.sk,
    now - 400,
  ),
  // The admin makes #sec private to themself (and so to their devices), and turns sealing on.
  signEvent(
    makeChannelDefinition(
      { channel: 'sec', fleet, creator: admin.pk, private: true, members: [admin.pk] },
      now - 300,
    ),
    admin.sk,
  ),
  signEvent(makeFleetSetting(fleet, true, now - 250), admin.sk),
  // The device hands #sec's first epoch to itself.
  signEvent(
    makeEnvelope(
      makeEpoch('sec', 0, new Uint8Array(32).fill(7)),
      device.pk,
      device.sk,
      fleet,
      now - 200,
    ),
    device.sk,
  ),
]

const probe = signEvent(
  { kind: Kind.ChatMessage, created_at: now, tags: [['h', 'sec']], content: 'probe' },
  device.sk,
)

/** Everything a reader of the state can ask that this history decides. */
function summary(state: FleetState, admitted: Set<string>) {
  return {
    admitted: [...admitted].sort(),
    held: state.heldCount,
    grants: state.grants
      .allGrants()
      .map((g) => g.id)
      .sort(),
    definition: state.channels.definition('sec', now)?.id,
    deviceReads: state.channels.isMember(device.pk, 'sec', now),
    outsiderReads: state.channels.isMember(founder.pk.replace(/^./, '0'), 'sec', now),
    // Whether the setting counts: a plaintext message in #sec is refused.
    plaintext: state.admit(probe, now).ok,
  }
}

function run(batches: NostrEvent[][]) {
  const state = new FleetState({ founder: fleet, verifySignature: verifyEventSignature })
  const admitted = new Set<string>()
  for (const batch of batches) {
    for (const { event, admission } of state.admitBatch(batch, now, { keepPending: true }))
      if (admission.ok) admitted.add(event.id)
  }
  return summary(state, admitted)
}

function* permutations<T>(items: readonly T[]): Generator<T[]> {
  if (items.length <= 1) {
    yield [...items]
    return
  }
  for (let i = 0; i < items.length; i++) {
    const rest = [...items.slice(0, i), ...items.slice(i + 1)]
    for (const p of permutations(rest)) yield [items[i]!, ...p]
  }
}

/** Every way to cut `items` (kept in order) into consecutive non-empty batches. */
function* splits<T>(items: readonly T[]): Generator<T[][]> {
  const cuts = items.length - 1
  for (let mask = 0; mask < 1 << cuts; mask++) {
    const out: T[][] = [[items[0]!]]
    for (let i = 1; i < items.length; i++) {
      if (mask & (1 << (i - 1))) out.push([items[i]!])
      else out[out.length - 1]!.push(items[i]!)
    }
    yield out
  }
}

describe('FleetState: one state, whatever the batches and their order', () => {
  it('the whole history in one batch admits everything, holds nothing, and seals #sec', () => {
    const one = run([history])
    expect(one).toMatchObject({
      admitted: history.map((e) => e.id).sort(),
      held: 0,
      definition: history[2]!.id,
      deviceReads: true,
      outsiderReads: false,
      plaintext: false,
    })
  })

  it('attacker (a hub paging newest first): every split of every order gives that same state', () => {
    const expected = run([history])
    let runs = 0
    const differing: string[] = []
    for (const order of permutations(history)) {
      for (const batches of splits(order)) {
        runs++
        const got = run(batches)
        if (JSON.stringify(got) !== JSON.stringify(expected)) {
          const names = batches.map((b) => b.map((e) => e.kind).join('+')).join(' | ')
          differing.push(`${names}: ${JSON.stringify(got)}`)
        }
      }
    }
    expect(runs).toBe(120 * 16)
    expect(differing.slice(0, 3)).toEqual([])
  })

  it('a definition whose author never shows up is held, bounded, and never admitted', () => {
    const stranger = key()
    const state = new FleetState({
      founder: fleet,
      verifySignature: verifyEventSignature,
      maxPending: 3,
      pendingMaxAgeSeconds: 60,
    })
    const defs = [0, 1, 2, 3, 4].map((i) =>
      signEvent(
        makeChannelDefinition(
          { channel: `c${i}`, fleet, creator: stranger.pk, private: true, members: [] },
          now - 10,
        ),
        stranger.sk,
      ),
    )
    const results = state.admitBatch(defs, now, { keepPending: true })
    expect(results.every((r) => !r.admission.ok && r.admission.error.reason === 'held')).toBe(true)
    expect(state.heldCount).toBe(3)
    // A day later they have aged out: a grant of anyone tries nothing old.
    const late = signGrant(
      { subject: device.pk, role: 'device', fleet },
      founder.sk,
      device.sk,
      now + 100,
    )
    state.admitBatch([late], now + 100, { keepPending: true })
    const another = signEvent(
      makeChannelDefinition(
        { channel: 'late', fleet, creator: stranger.pk, private: true, members: [] },
        now + 100,
      ),
      stranger.sk,
    )
    state.admitBatch([another], now + 100, { keepPending: true })
    expect(state.heldCount).toBe(1)
    // A hub does not hold (no keepPending): it answers at once.
    const hub = new FleetState({ founder: fleet, verifySignature: verifyEventSignature })
    const [answer] = hub.admitBatch([defs[0]!], now)
    expect(answer?.admission.ok).toBe(false)
    expect(hub.heldCount).toBe(0)
  })
})
