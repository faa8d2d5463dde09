import { join } from 'node:path'
import { generateSecretKey } from 'nostr-tools/pure'
import { describe, expect, it } from 'vitest'
import { makeEnvelope } from '../../src/events/e2e-envelope.js'
import { newEpoch } from '../../src/events/e2e-epoch.js'
import { openSealed, sealedEpochId } from '../../src/events/e2e-seal.js'
import { makeFleetSetting } from '../../src/events/e2e-setting.js'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
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

/** Hands `to` everything `from` sent, as a hub would relay it. */
async function relay(from: KithNode, ...to: KithNode[]): Promise<void> {
  for (const n of to) await n.intake(sent(from))
}

const texts = (n: KithNode) => n.history({ channel: 'ops', limit: 100 }).map((i) => i.event.content)

/** The epoch the message of this text was sealed under, as `n` sent it. */
const epochOf = (n: KithNode, text: string) =>
  sealedEpochId(
    sent(n).find(
      (e) => e.id === n.history({ limit: 100 }).find((i) => i.event.content === text)!.event.id,
    )!,
  )

/**
 * Nodes of one person's sealed fleet (real node.db each, no hub): each started, handed the
 * fleet's "encrypt on" and every other node's grants. `log` collects the first node's log lines.
 */
async function sealedFleet(
  names: readonly string[],
  log?: (line: string) => void,
): Promise<{ ownerSk: Uint8Array; fleet: string; nodes: KithNode[] }> {
  const ownerSk = generateSecretKey()
  const fleet = publicKeyOf(ownerSk)
  const nodes: KithNode[] = []
  for (const name of names) {
    const home = join(tempDir(), name)
    initIdentity({ home, name, ownerSecret: ownerSk })
    const node = await startInProcessNode({
      home,
      embedPort: 0,
      verifyWorkers: 0,
      ...(nodes.length === 0 && log !== undefined ? { log } : {}),
    })
    nodes.push(node)
  }
  const setting = signEvent(makeFleetSetting(fleet, true, now()), ownerSk)
  for (const n of nodes) {
    await n.intake([setting])
    for (const m of nodes) if (m !== n) await relay(m, n)
  }
  return { ownerSk, fleet, nodes }
}

describe('kith-e2e/1 rotation between nodes (events relayed by hand, real node.db)', () => {
  it('two rotations at once converge, and a message sent mid-rotation is read by every remaining member', async () => {
    const { ownerSk, fleet, nodes } = await sealedFleet(['a', 'b', 'c', 'd'])
    const [a, b, c, d] = nodes as [KithNode, KithNode, KithNode, KithNode]
    await a.sendChat({ channel: 'ops', text: 'm0', waitMs: 0 })
    await relay(a, b, c, d)
    for (const n of nodes) expect(texts(n)).toEqual(['m0'])

    // d's device is revoked; a and b learn it, c not yet.
    const revocation = signEvent(
      makeRevocation({ fleet, keys: [d.id.devicePubkey] }, now()),
      ownerSk,
    )
    await a.intake([revocation])
    await b.intake([revocation])
    // Two rotations at once, and a message under the previous epoch from c, unaware.
    await a.sendChat({ channel: 'ops', text: 'a1', waitMs: 0 })
    await b.sendChat({ channel: 'ops', text: 'b1', waitMs: 0 })
    await c.sendChat({ channel: 'ops', text: 'c0 mid-rotation', waitMs: 0 })
    expect(epochOf(a, 'a1')).not.toBe(epochOf(b, 'b1'))
    expect(epochOf(c, 'c0 mid-rotation')).toBe(epochOf(a, 'm0'))
    await c.intake([revocation])
    for (const [from, to] of [
      [a, [b, c]],
      [b, [a, c]],
      [c, [a, b]],
    ] as const)
      await relay(from, ...to)
    for (const n of [a, b, c])
      expect(texts(n).sort()).toEqual(['a1', 'b1', 'c0 mid-rotation', 'm0'])

    // Every remaining member now seals under the same epoch: number 1, the lower of the two ids.
    const winner = [epochOf(a, 'a1')!, epochOf(b, 'b1')!].sort()[0]
    for (const [n, text] of [
      [a, 'a2'],
      [b, 'b2'],
      [c, 'c2'],
    ] as const) {
      await n.sendChat({ channel: 'ops', text, waitMs: 0 })
      expect(epochOf(n, text)).toBe(winner)
    }

    // d, handed everything, opens what was sealed under epoch 0 and nothing after.
    const everything = [...sent(a), ...sent(b), ...sent(c)]
    await d.intake(everything)
    expect(texts(d).sort()).toEqual(['c0 mid-rotation', 'm0'])
    const dKeys = (id: string) => d.store.e2e.epoch(id)
    const later = everything.filter((e) => e.kind === 9 && sealedEpochId(e) !== epochOf(a, 'm0'))
    expect(later.length).toBe(5)
    for (const e of later) expect(() => openSealed(e, dKeys)).toThrow(/no-key/)
  })
})

describe('kith-e2e/1: a member who hides that it holds an epoch', () => {
  it('makes an epoch and sends it to everyone but itself; once it is revoked, the next sender still rotates', async () => {
    const { ownerSk, fleet, nodes } = await sealedFleet(['a', 'b', 'mallory'])
    const [a, b, mallory] = nodes as [KithNode, KithNode, KithNode]
    await a.sendChat({ channel: 'ops', text: 'm0', waitMs: 0 })
    await relay(a, b, mallory)
    // Mallory, still a member, makes a later epoch of #ops and envelopes it to a and b only:
    // no envelope names her, so an epoch's recipients alone would not show she holds it.
    const hidden = newEpoch('ops', 5, (n) => crypto.getRandomValues(new Uint8Array(n)))
    const sk = mallory.id.deviceSecret
    const planted = [a, b].map((n) =>
      signEvent(makeEnvelope(hidden, n.id.devicePubkey, sk, fleet, now()), sk),
    )
    await a.intake(planted)
    await b.intake(planted)
    await b.sendChat({ channel: 'ops', text: 'while a member', waitMs: 0 })
    // While she is a member, her epoch is the current one: that is allowed.
    expect(epochOf(b, 'while a member')).toBe(hidden.id)

    const revocation = signEvent(
      makeRevocation({ fleet, keys: [mallory.id.devicePubkey] }, now()),
      ownerSk,
    )
    await a.intake([revocation])
    await a.sendChat({ channel: 'ops', text: 'after her removal', waitMs: 0 })
    const after = epochOf(a, 'after her removal')
    expect(after).not.toBe(hidden.id)
    const message = sent(a).find((e) => sealedEpochId(e) === after && e.kind === 9)!
    // Everything she holds, her own epoch included, opens nothing sent after.
    const hers = (id: string) => (id === hidden.id ? hidden : mallory.store.e2e.epoch(id))
    expect(() => openSealed(message, hers)).toThrow(/no-key/)
    await relay(a, b)
    expect(texts(b)).toContain('after her removal')
  })
})

describe('kith-e2e/1 refusals at a node’s intake', () => {
  it('tampered, re-signed and wrongly keyed events and envelopes are refused with their reason and never shown', async () => {
    const logs: string[] = []
    const { nodes } = await sealedFleet(['a', 'b', 'c'], (l) => logs.push(l))
    const [a, b, c] = nodes as [KithNode, KithNode, KithNode]
    await b.sendChat({ channel: 'ops', text: 'the real words', waitMs: 0 })
    const real = sent(b).find((e) => e.kind === 9)!
    const envelopes = sent(b).filter((e) => e.kind === 4145)
    // Envelopes first, on their own: then the forgeries, then the real message.
    await a.intake(envelopes)
    const flip = (s: string) => s.slice(0, 50) + (s[50] === 'A' ? 'B' : 'A') + s.slice(51)
    const tampered = signEvent({ ...real, content: flip(real.content) }, b.id.deviceSecret)
    const resigned = signEvent({ ...real }, c.id.deviceSecret)
    const toA = envelopes.find((e) =>
      e.tags.some((t) => t[0] === 'p' && t[1] === a.id.devicePubkey),
    )!
    const wrongEpoch = signEvent(
      {
        ...toA,
        tags: toA.tags.map((t) => (t[0] === 'epoch' ? ['epoch', 'f'.repeat(64), '0'] : t)),
      },
      b.id.deviceSecret,
    )
    await a.intake([tampered, resigned, wrongEpoch])
    expect(texts(a)).toEqual([])
    expect(logs.join('\n')).toMatch(/kept sealed .*tampered/)
    expect(logs.join('\n')).toMatch(/kept sealed .*misbound/)
    expect(logs.join('\n')).toMatch(/refused key envelope .*wrong-epoch/)
    await a.intake([real])
    expect(texts(a)).toEqual(['the real words'])
  })
})
