import { join } from 'node:path'
import { generateSecretKey } from 'nostr-tools/pure'
import { describe, expect, it } from 'vitest'
import { openEnvelope, parseEnvelopeHead } from '../../src/events/e2e-envelope.js'
import type { Epoch } from '../../src/events/e2e-epoch.js'
import { openSealed, sealedEpochId } from '../../src/events/e2e-seal.js'
import { makeFleetSetting } from '../../src/events/e2e-setting.js'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { signGrant } from '../../src/grants/grant.js'
import { makeRevocation } from '../../src/grants/revocation.js'
import { initIdentity } from '../../src/identity/keys.js'
import { KithNode } from '../../src/node/kith-node.js'
import { tempDir } from '../helpers/tmp.js'
import { startInProcessNode } from '../helpers/in-process-node.js'

const now = () => Math.floor(Date.now() / 1000)

/** Everything a node has put in its outbox, as sent (sealed), oldest first. */
function sent(node: KithNode): NostrEvent[] {
  return (
    node.store.events.db.prepare('SELECT raw FROM outbox ORDER BY queued_at, rowid').all() as {
      raw: string
    }[]
  ).map((r) => JSON.parse(r.raw) as NostrEvent)
}

async function relay(from: KithNode, ...to: KithNode[]): Promise<void> {
  for (const n of to) await n.intake(sent(from))
}

/** The sealed form of the message `text` as `n` sent it. */
function wireOf(n: KithNode, text: string): NostrEvent {
  const id = n.history({ limit: 100 }).find((i) => i.event.content === text)!.event.id
  return sent(n).find((e) => e.id === id)!
}

/** The epoch keys whoever holds `sk` can take from the envelopes `n` sent to it. */
function keysFor(n: KithNode, sk: Uint8Array): Map<string, Epoch> {
  const pub = publicKeyOf(sk)
  const keys = new Map<string, Epoch>()
  for (const e of sent(n).filter((x) => x.kind === 4145))
    if (parseEnvelopeHead(e).recipient === pub) {
      const epoch = openEnvelope(e, sk)
      keys.set(epoch.id, epoch)
    }
  return keys
}

/** One person's sealed fleet of in-process nodes (real node.db each, events relayed by hand). */
async function sealedFleet(names: readonly string[]) {
  const ownerSk = generateSecretKey()
  const fleet = publicKeyOf(ownerSk)
  const nodes: KithNode[] = []
  for (const name of names) {
    const home = join(tempDir(), name)
    initIdentity({ home, name, ownerSecret: ownerSk })
    const node = await startInProcessNode({ home, embedPort: 0, verifyWorkers: 0 })
    nodes.push(node)
  }
  const setting = signEvent(makeFleetSetting(fleet, true, now()), ownerSk)
  for (const n of nodes) {
    await n.intake([setting])
    for (const m of nodes) if (m !== n) await relay(m, n)
  }
  return { ownerSk, fleet, nodes }
}

describe('kith-e2e/1: what of the past a new key is sent (issue 28, item 3)', () => {
  it("an agent key minted with only a laptop's device key gets no epoch key and opens no earlier message; the owner's agent gets the current epoch only", async () => {
    const { ownerSk, fleet, nodes } = await sealedFleet(['desk', 'laptop', 'old'])
    const [desk, laptop, old] = nodes as [KithNode, KithNode, KithNode]
    await desk.sendChat({ channel: 'ops', text: 'epoch 0 secret', waitMs: 0 })
    await relay(desk, laptop)
    // An old device is revoked: the next message rotates, so #ops has a superseded epoch.
    const revocation = signEvent(
      makeRevocation({ fleet, keys: [old.id.devicePubkey] }, now()),
      ownerSk,
    )
    await desk.intake([revocation])
    await desk.sendChat({ channel: 'ops', text: 'epoch 1 secret', waitMs: 0 })
    expect(sealedEpochId(wireOf(desk, 'epoch 1 secret'))).not.toBe(
      sealedEpochId(wireOf(desk, 'epoch 0 secret')),
    )

    // The attacker holds the laptop's device key (a lost laptop, a browser's storage) and mints
    // an agent with it; the desk learns the grant as it would from any hub.
    const agentSk = generateSecretKey()
    const laptopGrant = laptop.book.currentGrant(laptop.id.devicePubkey, now())!
    const minted = signGrant(
      {
        subject: publicKeyOf(agentSk),
        role: 'agent',
        fleet,
        parent: laptopGrant.id,
        name: 'innocent',
      },
      laptop.id.deviceSecret,
      agentSk,
      now(),
    )
    // And the owner grants an agent of its own, for comparison.
    const ownAgentSk = generateSecretKey()
    const owned = signGrant(
      { subject: publicKeyOf(ownAgentSk), role: 'agent', fleet, name: 'helper' },
      ownerSk,
      ownAgentSk,
      now(),
    )
    await desk.intake([minted, owned])
    expect(desk.book.authorize(publicKeyOf(agentSk), now()).ok).toBe(true)

    // History sharing ran: the minted agent was sent nothing, and opens nothing.
    expect(keysFor(desk, agentSk).size).toBe(0)
    const stolen = keysFor(desk, agentSk)
    for (const text of ['epoch 0 secret', 'epoch 1 secret'])
      expect(() => openSealed(wireOf(desk, text), (id) => stolen.get(id))).toThrow(/no-key/)
    // The owner's agent got the epoch in use, never the superseded one.
    const owns = keysFor(desk, ownAgentSk)
    expect([...owns.keys()]).toEqual([sealedEpochId(wireOf(desk, 'epoch 1 secret'))])
    expect(() => openSealed(wireOf(desk, 'epoch 0 secret'), (id) => owns.get(id))).toThrow(/no-key/)

    // The next message joins the minted agent at a new epoch: it reads from there on only.
    await desk.sendChat({ channel: 'ops', text: 'after the agent joined', waitMs: 0 })
    const later = keysFor(desk, agentSk)
    expect(later.size).toBe(1)
    const after = wireOf(desk, 'after the agent joined')
    expect(later.has(sealedEpochId(after)!)).toBe(true)
    for (const text of ['epoch 0 secret', 'epoch 1 secret'])
      expect(() => openSealed(wireOf(desk, text), (id) => later.get(id))).toThrow(/no-key/)
    expect(openSealed(after, (id) => later.get(id)).content).toBe('after the agent joined')

    // The laptop, a device of the person, still reads every message, old ones included.
    await relay(desk, laptop)
    expect(
      laptop
        .history({ channel: 'ops', limit: 100 })
        .map((i) => i.event.content)
        .sort(),
    ).toEqual(['after the agent joined', 'epoch 0 secret', 'epoch 1 secret'])
  })
})
