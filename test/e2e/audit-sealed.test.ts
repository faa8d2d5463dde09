import { writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { isSealed } from '../../src/events/e2e-seal.js'
import type { Epoch } from '../../src/events/e2e-epoch.js'
import { verifyEventSignature, type NostrEvent } from '../../src/events/event.js'
import { Kind } from '../../src/events/kinds.js'
import { audit, type AuditReport } from '../../src/grants/audit.js'
import { parseExportLine } from '../../src/grants/audit-export.js'
import type { ChatItem } from '../../src/node/chat-store.js'
import { laptopAndDevbox, runKith, setupKith, startNodeProcess } from '../helpers/cli.js'
import { ask, history, threadedUnder } from '../helpers/node-chat.js'
import { tempDir } from '../helpers/tmp.js'

// kith audit of a sealed fleet (issue 33): from a hub's events, read as a device of the fleet
// (`--hub URL`), and from an export, which carries the sealed events as the hub does with the
// keys of their epochs so a verifier with no key of the fleet opens and checks them.

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

/** A port nothing listens on: taken from the OS, then given back. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

function exportLines(text: string): { events: NostrEvent[]; epochs: Epoch[] } {
  const events: NostrEvent[] = []
  const epochs: Epoch[] = []
  for (const line of text.trim().split('\n')) {
    const parsed = parseExportLine(JSON.parse(line))
    if ('epoch' in parsed) epochs.push(parsed.epoch)
    else events.push(parsed.event)
  }
  return { events, epochs }
}

describe('kith audit of a sealed fleet (real hub, nodes and agent)', { timeout: 240_000 }, () => {
  it('audits from the hub as a device, and exports the sealed turns in a form a verifier checks', async () => {
    const dir = tempDir()
    const { hub, laptop, devbox } = await laptopAndDevbox(dir)
    const added = await setupKith(['agent', 'add', 'claude', '--', process.execPath, fakeAgent], {
      home: devbox,
    })
    expect(added.code, added.stderr).toBe(0)
    const nd = await startNodeProcess(devbox)
    const nl = await startNodeProcess(laptop)
    await nd.waitFor(/linked to/)
    await nl.waitFor(/linked to/)

    // One turn: the agent asks a card, the owner allows it from the laptop.
    const q = await ask(laptop, '@claude permission rm -rf build')
    let card: ChatItem | undefined
    await expect
      .poll(
        async () => {
          card = (await history(laptop)).find(
            (i) => i.event.kind === Kind.PermissionRequest && i.event.tags.some((t) => t[1] === q),
          )
          return card !== undefined
        },
        { timeout: 30_000 },
      )
      .toBe(true)
    const permit = await runKith(['permit', card!.event.id, '1'], { home: laptop })
    expect(permit.code, permit.stderr).toBe(0)
    expect((await threadedUnder(laptop, q))[0]!.event.content).toBe('permission: selected allow')
    await threadedUnder(devbox, card!.event.id, { kind: Kind.PermissionDecision })
    // The fleet is sealed: the hub holds the card as ciphertext.
    const onHub = await runKith(['audit', 'export', '--hub', hub.url], { home: laptop })
    expect(onHub.code, onHub.stderr).toBe(0)
    const hubCard = exportLines(onHub.stdout).events.find((e) => e.id === card!.event.id)
    expect(hubCard !== undefined && isSealed(hubCard)).toBe(true)

    const turnOf = (r: AuditReport) => r.turns.find((t) => t.id === q)
    const checkTurn = (r: AuditReport) => {
      expect(r.flags).toEqual([])
      const turn = turnOf(r)
      expect(turn, JSON.stringify(r.notes)).toBeDefined()
      expect(turn!.cards.map((c) => c.id)).toEqual([card!.event.id])
      expect(turn!.cards[0]!.title).toBe('rm -rf build')
      expect(turn!.cards[0]!.decisions).toMatchObject([
        { optionKind: 'allow_once', approver: true },
      ])
      expect(turn!.cards[0]!.tally.state).toBe('allowed')
      expect(turn!.outcome).toBe('answered')
    }

    // From the hub, as the laptop: every signature checked, sealed events opened with its keys.
    const viaHub = await runKith(['audit', '--hub', hub.url, '--json'], { home: laptop })
    expect(viaHub.code, viaHub.stdout + viaHub.stderr).toBe(0)
    const hubReport = JSON.parse(viaHub.stdout) as AuditReport
    checkTurn(hubReport)
    expect(hubReport.counts).toMatchObject({ vouched: 0, sealed: 0, badSignatures: 0 })
    expect(hubReport.counts.opened).toBeGreaterThan(0)
    const hubText = await runKith(['audit', '--hub', hub.url], { home: laptop })
    expect(hubText.code, hubText.stderr).toBe(0)
    expect(hubText.stdout).toContain('rm -rf build')

    // A hub not reached, or no hub URL at all: a clear line, and not 1 (which says "flagged").
    const port = await closedPort()
    for (const [url, status, said] of [
      [`ws://127.0.0.1:${port}`, 6, /--hub ws:\/\/127\.0\.0\.1:\d+: cannot reach hub/],
      ['http://example.org', 2, /hub URLs start with ws:\/\/ or wss:\/\//],
      ['not a url', 2, /not a URL/],
    ] as const) {
      const r = await runKith(['audit', '--hub', url], { home: laptop })
      expect(r.code, r.stderr).toBe(status)
      expect(r.stderr).toMatch(said)
      expect(r.stderr).not.toMatch(/unexpected error/)
    }
    const both = await runKith(['audit', '--hub', hub.url, '--file', 'x'], { home: laptop })
    expect(both.code).toBe(2)

    // The export of the laptop's store: the turn's sealed events as the hub carries them (the
    // node keeps only their opened form) and the keys of their epochs.
    const exported = await runKith(['audit', 'export'], { home: laptop })
    expect(exported.code, exported.stderr).toBe(0)
    expect(exported.stderr).toMatch(/sealed, with the keys of 1 epoch/)
    const file = exportLines(exported.stdout)
    expect(file.epochs.length).toBe(1)
    expect(file.events.every(verifyEventSignature)).toBe(true)
    for (const id of [q, card!.event.id])
      expect(isSealed(file.events.find((e) => e.id === id)!)).toBe(true)
    const fleet = hubReport.fleet

    // The pure verifier, with nothing of the fleet's but the file: the same turn, checked.
    const keys = new Map(file.epochs.map((e) => [e.id, e]))
    const pure = audit({
      fleet,
      events: file.events,
      verifySignature: verifyEventSignature,
      keyOf: (id) => keys.get(id),
    })
    checkTurn(pure)
    expect(pure.counts).toMatchObject({ vouched: 0, sealed: 0, badSignatures: 0 })
    // And kith audit --file on the devbox says the same.
    const path = join(dir, 'fleet.audit.jsonl')
    writeFileSync(path, exported.stdout)
    const fromFile = await runKith(['audit', '--file', path, '--json'], { home: devbox })
    expect(fromFile.code, fromFile.stdout + fromFile.stderr).toBe(0)
    checkTurn(JSON.parse(fromFile.stdout) as AuditReport)

    // Without the keys the turn is not read (and said so), never passed as read.
    const keyless = audit({ fleet, events: file.events, verifySignature: verifyEventSignature })
    expect(turnOf(keyless)).toBeUndefined()
    expect(keyless.counts.sealed).toBeGreaterThan(0)
    expect(keyless.notes.join('\n')).toMatch(/could not be read here/)
    // A card's opened text under the sealed form's signature (what node.db keeps) is refused.
    const openedCard = card!.event
    const swapped = file.events.map((e) => (e.id === openedCard.id ? openedCard : e))
    const forged = audit({
      fleet,
      events: swapped,
      verifySignature: verifyEventSignature,
      keyOf: (id) => keys.get(id),
    })
    expect(forged.flags.map((f) => f.code)).toContain('bad-signature')
    expect(turnOf(forged)?.cards ?? []).toEqual([])
    await nl.stop()
    await nd.stop()
  })
})
