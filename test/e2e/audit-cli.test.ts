import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { hexToBytes } from '@noble/hashes/utils.js'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { Kind } from '../../src/events/kinds.js'
import type { AuditReport } from '../../src/grants/audit.js'
import { signGrant } from '../../src/grants/grant.js'
import { agentFile } from '../../src/identity/home.js'
import type { ChatItem } from '../../src/node/chat-store.js'
import { NodeStore } from '../../src/store/node-store.js'
import { laptopAndDevbox, runKith, setupKith, startNodeProcess } from '../helpers/cli.js'
import { ask, history, threadedUnder } from '../helpers/node-chat.js'
import { tempDir } from '../helpers/tmp.js'

// kith audit through real `kith` processes (issue 33): an honest turn with a card the owner
// allowed passes on the host and from an export; a decision forged by a person who is not an
// approver, and a bypass-mode start by one, are flagged once they are in the host's store.

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

const flagCodes = (r: AuditReport) => r.flags.map((f) => f.code)

describe(
  'kith audit over a real fleet (fake ACP agent, real processes)',
  { timeout: 240_000 },
  () => {
    it('passes an honest turn on the host and from an export; flags forged decisions and starts', async () => {
      const dir = tempDir()
      const { laptop, devbox, ownerSk } = await laptopAndDevbox(dir, { plain: true })
      const owner = publicKeyOf(ownerSk)
      const added = await setupKith(['agent', 'add', 'claude', '--', process.execPath, fakeAgent], {
        home: devbox,
      })
      expect(added.code, added.stderr).toBe(0)
      const nd = await startNodeProcess(devbox)
      const nl = await startNodeProcess(laptop)
      await nd.waitFor(/linked to/)
      await nl.waitFor(/linked to/)

      // A prompt from the laptop whose card the owner allows there: the prompt, card and answer.
      const allowedTurn = async (text: string) => {
        const q = await ask(laptop, text)
        let card: ChatItem | undefined
        await expect
          .poll(
            async () => {
              card = (await history(laptop)).find(
                (i) =>
                  i.event.kind === Kind.PermissionRequest && i.event.tags.some((t) => t[1] === q),
              )
              return card !== undefined
            },
            { timeout: 30_000 },
          )
          .toBe(true)
        const permit = await runKith(['permit', card!.event.id, '1'], { home: laptop })
        expect(permit.code, permit.stderr).toBe(0)
        const answer = (await threadedUnder(laptop, q))[0]!
        // The host has the decision and the answer before it is audited.
        await threadedUnder(devbox, q)
        await threadedUnder(devbox, card!.event.id, { kind: Kind.PermissionDecision })
        return { q, card: card!, answer }
      }
      // The honest turns: the agent asks a card, the owner allows it from the laptop. The second
      // one's answer says the tool ran (the fake agent's `permission` reports no tool call).
      const { q, card, answer } = await allowedTurn('@claude permission rm -rf build')
      expect(answer.event.content).toBe('permission: selected allow')
      const edit = await allowedTurn('@claude edit src/greeting.ts')
      expect(edit.answer.event.content).toMatch(/^Fixed the typo/)

      const onHost = await runKith(['audit', '--json'], { home: devbox })
      expect(onHost.code, onHost.stdout + onHost.stderr).toBe(0)
      const honest = JSON.parse(onHost.stdout) as AuditReport
      expect(honest.flags).toEqual([])
      const turn = honest.turns.find((t) => t.id === q)
      expect(turn).toBeDefined()
      expect(turn!.agent.name).toBe('claude')
      expect(turn!.prompter.person).toBe(owner)
      expect(turn!.prompter.allowed).toBe(true)
      expect(turn!.policy).toBeDefined()
      expect(turn!.cards).toHaveLength(1)
      const c = turn!.cards[0]!
      expect(c.id).toBe(card.event.id)
      expect(c.title).toBe('rm -rf build')
      expect(c.policy).toBe(turn!.policy!.id)
      expect(c.decisions).toHaveLength(1)
      expect(c.decisions[0]).toMatchObject({ optionKind: 'allow_once', approver: true })
      expect(c.decisions[0]!.by.person).toBe(owner)
      expect(c.tally.state).toBe('allowed')
      const editCard = honest.turns.find((t) => t.id === edit.q)?.cards[0]
      expect(editCard).toMatchObject({ id: edit.card.event.id, ran: 'completed' })
      expect(editCard!.decisions).toMatchObject([{ approver: true }])

      // The text report says the same, and --html writes a page with the turn.
      const page = join(dir, 'audit.html')
      const text = await runKith(['audit', '--html', page], { home: devbox })
      expect(text.code, text.stderr).toBe(0)
      expect(text.stdout).toContain('rm -rf build')
      expect(readFileSync(page, 'utf8')).toContain('rm -rf build')

      // An export from the laptop, audited on the devbox: the same verdict, every signature checked.
      const exported = await runKith(['audit', 'export'], { home: laptop })
      expect(exported.code, exported.stderr).toBe(0)
      const file = join(dir, 'fleet.audit.jsonl')
      writeFileSync(file, exported.stdout)
      const fromFile = await runKith(['audit', '--file', file, '--json'], { home: devbox })
      expect(fromFile.code, fromFile.stdout + fromFile.stderr).toBe(0)
      const viaFile = JSON.parse(fromFile.stdout) as AuditReport
      expect(viaFile.counts).toMatchObject({ badSignatures: 0, vouched: 0, sealed: 0 })
      expect(viaFile.flags).toEqual([])
      const fileTurn = viaFile.turns.find((t) => t.id === q)
      expect(fileTurn?.cards.map((x) => x.decisions.map((d) => [d.id, d.approver]))).toEqual(
        turn!.cards.map((x) => x.decisions.map((d) => [d.id, d.approver])),
      )
      // Every signature is checked: one changed byte in the file is a bad signature, and a flag.
      const lines = exported.stdout.trim().split('\n')
      const at = lines.findIndex((l) => l.includes(card.event.id) && l.includes('"kind":4142'))
      expect(at).toBeGreaterThanOrEqual(0)
      lines[at] = lines[at]!.replace('rm -rf build', 'rm -rf bUild')
      const tampered = join(dir, 'tampered.jsonl')
      writeFileSync(tampered, lines.join('\n') + '\n')
      const bad = await runKith(['audit', '--file', tampered, '--json'], { home: devbox })
      expect(bad.code, bad.stderr).toBe(1)
      expect(flagCodes(JSON.parse(bad.stdout) as AuditReport)).toContain('bad-signature')

      // Bad inputs: one clear line and a status other than 1 (which means "flagged").
      const junk = join(dir, 'junk.jsonl')
      writeFileSync(junk, exported.stdout + 'not an event\n')
      for (const [args, status, said] of [
        [['audit', '--file', join(dir, 'nope')], 5, /--file .*nope: cannot read it/],
        [['audit', '--file', junk], 2, /line \d+: not a signed Nostr event/],
        [['audit', '--since', 'yesterday'], 2, /--since: not a time: yesterday/],
        [['audit', 'nonsense'], 2, /did you mean kith audit export/],
        [['audit', '--agent', 'nobody'], 5, /--agent nobody: no agent .*\(its agents: claude\)/],
        [['audit', '--html', join(dir, 'no', 'such', 'x.html')], 2, /--html .*: cannot write it/],
      ] as const) {
        const r = await runKith([...args], { home: devbox })
        expect(r.code, r.stderr).toBe(status)
        expect(r.stderr).toMatch(said)
        expect(r.stderr).not.toMatch(/unexpected error/)
      }
      // --agent: the counts are the agent's (here all of them), the turns its own.
      const one = await runKith(['audit', '--agent', 'claude', '--json'], { home: devbox })
      expect(one.code, one.stderr).toBe(0)
      expect((JSON.parse(one.stdout) as AuditReport).counts).toMatchObject({ turns: 2, cards: 2 })

      // The forgery: both nodes stopped, a second person (bob: an owner of the fleet, not an
      // approver of claude) is written into the host's store with a decision of his own on the
      // card, the owner's real decision taken out; and a session started in bypass mode by bob,
      // which the host would have refused, answered by the agent.
      await nl.stop()
      await nd.stop()
      const bob = generateSecretKey()
      const bobLaptop = generateSecretKey()
      const fleet = owner
      const gBob = signGrant(
        { subject: publicKeyOf(bob), role: 'owner', fleet, name: 'bob' },
        ownerSk,
        bob,
        answer.event.created_at - 60,
      )
      const gBobLaptop = signGrant(
        {
          subject: publicKeyOf(bobLaptop),
          role: 'device',
          fleet,
          parent: gBob.id,
          name: 'bob-laptop',
        },
        bob,
        bobLaptop,
        answer.event.created_at - 60,
      )
      const real = honest.turns.find((t) => t.id === edit.q)!.cards[0]!.decisions[0]!
      const dbPath = join(devbox, 'node.db')
      const store = new NodeStore(devbox)
      const realEvent = store.events.getEvent(real.id)!
      const forgedDecision = signEvent(
        {
          kind: Kind.PermissionDecision,
          created_at: realEvent.created_at,
          tags: realEvent.tags,
          content: realEvent.content,
        },
        bobLaptop,
      )
      const agentSk = hexToBytes(readFileSync(agentFile(devbox, 'claude', 'key'), 'utf8').trim())
      const agentPk = publicKeyOf(agentSk)
      const channelTag = (q0: NostrEvent) => q0.tags.find((t) => t[0] === 'h')!
      const prompt = store.events.getEvent(q)!
      const bypass = signEvent(
        {
          kind: Kind.ChatMessage,
          created_at: answer.event.created_at + 1,
          tags: [
            channelTag(prompt),
            ['p', agentPk],
            ['project', 'kith'],
            ['mode', 'bypassPermissions'],
          ],
          content: '@claude echo bypassed',
        },
        bobLaptop,
      )
      const bypassAnswer = signEvent(
        {
          kind: Kind.ChatMessage,
          created_at: answer.event.created_at + 2,
          tags: [channelTag(prompt), ['e', bypass.id, '', 'root'], ['p', publicKeyOf(bobLaptop)]],
          content: 'bypassed',
        },
        agentSk,
      )
      const stored = store.events.insertBatch([
        gBob,
        gBobLaptop,
        forgedDecision,
        bypass,
        bypassAnswer,
      ])
      store.close()
      expect(stored).toEqual(['stored', 'stored', 'stored', 'stored', 'stored'])
      const db = new Database(dbPath)
      const row = db.prepare('SELECT seq FROM events WHERE id = ?').get(real.id) as { seq: number }
      db.prepare('DELETE FROM tags WHERE seq = ?').run(row.seq)
      db.prepare('DELETE FROM events WHERE seq = ?').run(row.seq)
      db.close()

      const forged = await runKith(['audit', '--json'], { home: devbox })
      expect(forged.code, forged.stderr).toBe(1)
      const report = JSON.parse(forged.stdout) as AuditReport
      const nonApprover = report.flags.find((f) => f.code === 'non-approver-decision')
      expect(nonApprover, JSON.stringify(report.flags)).toMatchObject({
        event: edit.card.event.id,
        turn: edit.q,
      })
      expect(nonApprover!.text).toContain('bob-laptop')
      const forgedCard = report.turns.find((t) => t.id === edit.q)!.cards[0]!
      expect(forgedCard.decisions).toHaveLength(1)
      expect(forgedCard.decisions[0]).toMatchObject({ id: forgedDecision.id, approver: false })
      expect(forgedCard.decisions[0]!.by.person).toBe(publicKeyOf(bob))
      expect(report.flags.find((f) => f.code === 'start-not-approver')).toMatchObject({
        event: bypass.id,
        turn: bypass.id,
      })
      const text2 = await runKith(['audit'], { home: devbox })
      expect(text2.code).toBe(1)
      expect(text2.stdout).toMatch(/non-approver-decision|not an approver/)
    })
  },
)
