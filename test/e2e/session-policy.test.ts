import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { runKith, setupKith, startHubProcess, startNodeProcess } from '../helpers/cli.js'
import { askForReply } from '../helpers/node-chat.js'
import { init, pairUp } from '../helpers/pair-up.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

interface Listed {
  id: string
  thread?: string
  agentName: string
  status: string
}

async function listed(home: string): Promise<Listed[]> {
  const r = await runKith(['session', 'list', '--json'], { home })
  expect(r.code, r.stderr).toBe(0)
  return (JSON.parse(r.stdout) as { sessions: Listed[] }).sessions
}

describe("sessions from another person's device, under the agent's policies", () => {
  it(
    'starts where allow admits it; close, set and /mode need the approvers policy; refusals say why',
    { timeout: 180_000 },
    async () => {
      const dir = tempDir()
      const [alice, bob] = [join(dir, 'alice'), join(dir, 'bob')]
      await init(alice, 'alice-box')
      const hub = await startHubProcess(['--db', join(dir, 'hub.db')], alice)
      await setupKith(['hub', 'add', hub.url], { home: alice })
      await init(bob, 'bob-laptop')
      await pairUp(alice, ['fleet', 'invite', '--name', 'bob'], bob, ['fleet', 'join'])
      // bot takes anyone's prompts, and only Alice's approvals; mine only Alice's prompts. What
      // they would have run on Alice's machine is recorded in `ran`.
      const ran = join(dir, 'ran')
      for (const [name, allow] of [
        ['bot', 'fleet'],
        ['mine', 'owner'],
      ]) {
        const add = await runKith(
          [
            'agent',
            'add',
            name!,
            '--allow',
            allow!,
            '--',
            process.execPath,
            fakeAgent,
            '--modes',
            '--record',
            ran,
          ],
          { home: alice },
        )
        expect(add.code, add.stderr).toBe(0)
      }
      const project = tempDir()
      expect((await setupKith(['project', 'add', 'work', project], { home: alice })).code).toBe(0)
      const aliceNode = await startNodeProcess(alice)
      const bobNode = await startNodeProcess(bob)
      await aliceNode.waitFor(/linked to/)
      await bobNode.waitFor(/linked to/)

      // Bob starts a session of bot in Alice's project: allowed (bot's allow is the fleet).
      const started = await runKith(['session', 'new', 'bot', '--project', 'work', 'pwd'], {
        home: bob,
      })
      expect(started.code, started.stderr).toBe(0)
      expect(started.stdout).toContain(`in ${project}`)
      const id = /^session ([0-9a-f]{12})/.exec(started.stdout)![1]!
      const thread = (await listed(bob)).find((s) => s.id === id)!.thread!

      // Not mine: its allow policy is its owner's.
      const refused = await runKith(['session', 'new', 'mine', '--project', 'work', 'pwd'], {
        home: bob,
      })
      expect(refused.code).toBe(1)
      expect(refused.stderr).toMatch(/⚠ mine does not take prompts from \S+: its policy allows/)

      // A broadcast from Bob: bot answers, mine refuses (its policy), each receipt says so.
      const b = await runKith(
        ['broadcast', '#ops', 'echo to all', '--agents', 'bot,mine', '--json', '--wait', '60'],
        { home: bob },
      )
      expect(b.code).toBe(1)
      const receipts = (
        JSON.parse(b.stdout) as {
          receipts: { agent: string; status: string; reason?: string; answer?: string }[]
        }
      ).receipts
      expect(receipts.find((r) => r.agent === 'bot')).toMatchObject({
        status: 'answered',
        answer: 'to all',
      })
      expect(receipts.find((r) => r.agent === 'mine')).toMatchObject({ status: 'refused' })
      expect(receipts.find((r) => r.agent === 'mine')!.reason).toMatch(
        /^⚠ mine does not take prompts from \S+: its policy allows/,
      )

      // The attack: a start that picks a mode that never asks. The mode is the approvers' call,
      // as `session set` is: refused before any session opens, and nothing runs.
      const bypass = await runKith(
        ['session', 'new', 'bot', '--project', 'work', '--mode', 'bypassPermissions', 'run ./x.sh'],
        { home: bob },
      )
      expect(bypass.code, bypass.stdout).toBe(1)
      expect(bypass.stderr).toMatch(
        /⚠ bot did not start a session: you may not choose its mode: its approvers are owner/,
      )
      const model = await runKith(
        ['session', 'new', 'bot', '--project', 'work', '--model', 'fake-small', 'pwd'],
        { home: bob },
      )
      expect(model.code).toBe(1)
      expect(model.stderr).toMatch(/you may not choose its model/)
      await aliceNode.waitFor(/refused a session start from .*: you may not choose its mode/)
      expect(existsSync(ran)).toBe(false)
      expect(
        JSON.parse((await runKith(['permit', '--json'], { home: alice })).stdout),
      ).toMatchObject({ requests: [] })

      // Closing or configuring bot's session takes its approvers policy: Bob is refused, with why.
      const close = await runKith(['session', 'close', id], { home: bob })
      expect(close.code).toBe(1)
      expect(close.stdout).toMatch(/⚠ you may not change bot's sessions: its approvers are/)
      const set = await runKith(['session', 'set', id, '--mode', 'plan'], { home: bob })
      expect(set.code).toBe(1)
      expect(set.stdout).toMatch(/⚠ you may not change bot's sessions/)
      expect(await askForReply(bob, '@bot /mode plan', thread)).toMatch(
        /^⚠ you may not change bot's sessions: its approvers are/,
      )
      expect(await askForReply(bob, '@bot mode', thread)).toBe('mode: default, model: none')

      // Alice may choose a start's mode; her node's log says what the session runs in.
      const aliceStart = await runKith(
        ['session', 'new', 'bot', '--project', 'work', '--mode', 'plan', 'mode'],
        { home: alice },
      )
      expect(aliceStart.code, aliceStart.stderr).toBe(0)
      await aliceNode.waitFor(
        /agent bot: set the new session \S+ in .* to mode plan, as its start asked/,
      )

      // Alice may: from her own device the same requests are carried out.
      const aliceSet = await runKith(['session', 'set', id, '--mode', 'plan'], { home: alice })
      expect(aliceSet.code, aliceSet.stdout).toBe(0)
      const aliceClose = await runKith(['session', 'close', id], { home: alice })
      expect(aliceClose.code, aliceClose.stdout).toBe(0)
      await expect
        .poll(async () => (await listed(bob)).some((s) => s.id === id), { timeout: 20_000 })
        .toBe(false)
      expect(await aliceNode.stop()).toBe(0)
      expect(await bobNode.stop()).toBe(0)
    },
  )
})
