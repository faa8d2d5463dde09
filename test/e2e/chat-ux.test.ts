import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import type { OpenCard } from '../../src/node/permission-cards.js'
import { runKith, setupKith, spawnKith, startNodeProcess } from '../helpers/cli.js'
import { ask, history, threadedUnder } from '../helpers/node-chat.js'
import { init } from '../helpers/pair-up.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

/** One machine with the fake agent `bot` (and `extra` agents: key only, or revoked), kith up running. */
async function box(extra: (home: string) => Promise<void> = () => Promise.resolve()) {
  const home = join(tempDir(), 'h')
  await init(home, 'box')
  const add = await setupKith(['agent', 'add', 'bot', '--', process.execPath, fakeAgent], { home })
  expect(add.code, add.stderr).toBe(0)
  await extra(home)
  const node = await startNodeProcess(home, ['--port', '0', '--cancel-grace', '1'])
  return { home, node }
}

const lineOf = (out: string, pattern: RegExp) => out.split('\n').findIndex((l) => pattern.test(l))

describe('no silent mistakes: each gets one clear line', { timeout: 150_000 }, () => {
  it('an unknown or revoked @name, kith watch of no agent, kith log of no channel, /join of a new one, /cancel of nothing', async () => {
    const { home } = await box(async (home) => {
      // A key only (nothing runs it), and an agent revoked before kith up starts.
      expect((await setupKith(['agent', 'add', 'keyonly'], { home })).code).toBe(0)
      expect((await setupKith(['agent', 'add', 'old'], { home })).code).toBe(0)
      expect((await runKith(['agent', 'revoke', 'old', '--yes'], { home })).code).toBe(0)
    })
    // A typo: refused, with the name meant.
    const typo = await runKith(['send', '#ops', '@bto echo hi'], { home })
    expect(typo.code).toBe(5)
    expect(typo.stderr).toMatch(/not sent: @bto names no one in this fleet \(did you mean @bot\?\)/)
    const revoked = await runKith(['send', '#ops', '@old echo hi'], { home })
    expect(revoked.code).toBe(5)
    expect(revoked.stderr).toMatch(
      /not sent: @old was revoked: no agent of that name is in this fleet now/,
    )
    expect((await history(home)).filter((i) => /echo hi/.test(i.event.content))).toEqual([])

    // kith watch of a name that is no agent ends at once, saying why.
    const watch = await runKith(['watch', 'nosuch'], { home })
    expect(watch.code).toBe(5)
    expect(watch.stderr).toMatch(/@nosuch names no one in this fleet/)
    const device = await runKith(['watch', 'box'], { home })
    expect(device.code).toBe(5)
    expect(device.stderr).toMatch(/@box is a device, not an agent/)

    // kith log of a channel nobody posted in: exit 5 and the near name; an empty window says so.
    await ask(home, '@bot echo one')
    const typoLog = await runKith(['log', '#osp'], { home })
    expect(typoLog.code).toBe(5)
    expect(typoLog.stderr).toMatch(/nobody has posted in #osp yet .*did you mean #ops\?/)
    const later = await runKith(
      ['log', '#ops', '--since', String(Math.floor(Date.now() / 1000) + 3600)],
      { home },
    )
    expect(later.code).toBe(0)
    expect(later.stderr).toMatch(/no messages in #ops since/)

    // In chat: /join of a new channel says it is new (and what was maybe meant); /cancel with
    // nothing running says so, and one for an agent nobody runs says it may stop nothing.
    const chat = spawnKith(['chat', '#ops'], home)
    await chat.waitFor(/── #ops ──/)
    chat.write('/join ops2\n')
    await chat.waitFor(
      /── #ops2 ── new channel: nobody has posted in #ops2 yet .*did you mean #ops\?/,
    )
    chat.write('/cancel\n')
    await chat.waitFor(
      /⚠ nothing to cancel in #ops2: no prompt to an agent there waits for an answer/,
    )
    chat.write('@keyonly are you there?\n')
    await chat.waitFor(/box \[device\]: @keyonly are you there\?/)
    chat.write('/cancel\n')
    await chat.waitFor(
      /cancel sent \(for 1 open prompt\); no online device reports running keyonly \(its node may be down\), so this may stop nothing/,
    )
    chat.write('/quit\n')
    expect(await chat.exit).toBe(0)
  })
})

describe('permission cards are hard to misanswer', { timeout: 150_000 }, () => {
  it('lists open cards, names the card an answer answers, asks when ambiguous, refuses a decided one', async () => {
    const { home } = await box()
    const none = await runKith(['permit'], { home })
    expect(none.code, none.stderr).toBe(0)
    expect(none.stdout).toMatch(/no open permission requests \(as this node knows\)/)
    const chat = spawnKith(['chat', '#ops'], home)
    await chat.waitFor(/── #ops ──/)
    // One turn, two identical calls: two cards open at once.
    chat.write('@bot permission-twice deploy\n')
    await chat.waitFor(
      /\[card 1\] bot asks to run: deploy[\s\S]*\[card 2\] bot asks to run: deploy/,
    )

    // kith permit alone lists them, with ids and options; --json too.
    const listed = await runKith(['permit'], { home })
    expect(
      listed.stdout.match(
        /^[0-9a-f]{8} {2}bot in #ops: deploy \(execute\) {2}options: 1 Allow once, 2 Reject/gm,
      ),
    ).toHaveLength(2)
    const json = JSON.parse((await runKith(['permit', '--json'], { home })).stdout) as {
      requests: OpenCard[]
    }
    expect(json.requests).toHaveLength(2)
    const [first, second] = json.requests
    // @bot has two open requests: which one is asked, nothing is answered.
    const which = await runKith(['permit', '@bot', '1'], { home })
    expect(which.code).toBe(2)
    expect(which.stderr).toMatch(
      /@bot has 2 open requests: \w{8} "deploy", \w{8} "deploy"; name one by its id/,
    )

    // In chat, /allow with two open asks which; /cards lists them numbered.
    chat.write('/allow\n')
    await chat.waitFor(
      /2 cards are open: \[card 1\] bot: deploy, \[card 2\] bot: deploy; which one\? \/allow N/,
    )
    chat.write('/cards\n')
    await chat.waitFor(/\[card 2\] bot: deploy \(execute\) {2}\[1\] Allow once {2}\[2\] Reject/)
    // /allow ID OPTION names the card it answered. Its number: the card block (title, preview,
    // options) that ends with its request id, never running on into the next card's block.
    const n2 = (
      await chat.waitFor(
        new RegExp(
          `\\[card (\\d)\\] bot asks to run: deploy \\(execute\\)\\n(?:(?![^\\n]*\\[card).*\\n)*?.*request ${second!.id.slice(0, 8)}`,
        ),
      )
    )[1]!
    chat.write(`/allow ${second!.id.slice(0, 6)} 2\n`)
    await chat.waitFor(new RegExp(`answered card ${n2} \\(bot: deploy\\) with Reject`))
    // Now one is open: /allow alone answers it, and says which.
    const n1 = n2 === '1' ? '2' : '1'
    chat.write('/allow\n')
    await chat.waitFor(new RegExp(`answered card ${n1} \\(bot: deploy\\) with Allow once`))
    // A decided card says so, in chat and from kith permit (exit 1).
    chat.write(`/allow ${n1}\n`)
    await chat.waitFor(
      new RegExp(
        `⚠ card ${n1} not answered: request \\w{8} \\("deploy"\\): it was already decided: Allow once`,
      ),
    )
    // Each answer this chat gave is one line: the node's echo of it is not shown again.
    expect(chat.output().match(/answered card \d \(bot: deploy\)/g)).toHaveLength(2)
    expect(chat.output()).not.toMatch(/answered \[card \d\] \(bot: deploy\)/)
    const again = await runKith(['permit', first!.id.slice(0, 8), '1'], { home })
    expect(again.code).toBe(1)
    expect(again.stderr).toMatch(/already decided|no longer open|turn has ended/)
    await chat.waitFor(
      /bot \[agent, authorized by you\]: ↳ permission: selected (allow|reject), selected (allow|reject)/,
    )
    expect((await runKith(['permit'], { home })).stdout).toMatch(/no open permission requests/)
    chat.write('/quit\n')
    expect(await chat.exit).toBe(0)
  })
})

describe('a paste is one message', { timeout: 120_000 }, () => {
  it('a bracketed paste, and lines ending in a backslash, are sent as one message that reaches the agent whole', async () => {
    const { home } = await box()
    const chat = spawnKith(['chat', '#ops'], home)
    await chat.waitFor(/── #ops ──/)
    chat.write(
      '\u001b[200~@bot please look at this\nstack trace line 2\necho pasted whole\u001b[201~\n',
    )
    await chat.waitFor(/bot \[agent, authorized by you\]: ↳ pasted whole/)
    chat.write('first half \\\n@bot echo second half\n')
    await chat.waitFor(/bot \[agent, authorized by you\]: ↳ second half/)
    chat.write('/quit\n')
    expect(await chat.exit).toBe(0)
    const sent = (await history(home)).filter((i) => i.from.role === 'device')
    expect(sent.map((i) => i.event.content)).toEqual([
      '@bot please look at this\nstack trace line 2\necho pasted whole',
      'first half \n@bot echo second half',
    ])
  })
})

describe('an agent at work, in chat and in kith watch', { timeout: 150_000 }, () => {
  it("watch gathers streamed chunks into lines; chat says it works, shows progress once and before the answer, renders it, keeps a cancelled turn's words", async () => {
    const { home } = await box()
    const watch = spawnKith(['watch', 'bot'], home)
    await watch.waitFor(/watching @bot/)
    const chat = spawnKith(['chat', '#ops'], home, { COLUMNS: '60' })
    await chat.waitFor(/── #ops ──/)

    chat.write('@bot words The build is green\\nand the tests pass too\n')
    await chat.waitFor(/↳ re box: @bot words/)
    // kith watch: whole lines, not a word per line.
    await watch.waitFor(/bot #ops: The build is green\nbot #ops: and the tests pass too\n/)
    expect(watch.output()).not.toMatch(/bot #ops: build\n/)

    // Working, then thinking (no tool call), then the answer.
    chat.write('@bot think all clear\n')
    await chat.waitFor(
      /⋯ bot is working on it…\n(.*\n)*?\s*⋯ bot is thinking…\n(.*\n)*?.*bot \[agent, authorized by you\]: ↳ (re box: .*\n\s+)?all clear/,
    )

    // A tool call reported four times shows twice (it starts, it ends), before the answer.
    chat.write('@bot progress\n')
    await chat.waitFor(/bot \[agent, authorized by you\]: ↳ (re box: .*\n\s+)?built/)
    const out = chat.output()
    const progress = out.split('\n').filter((l) => /⚙ npm run build/.test(l))
    expect(progress).toEqual([
      '  ⋯ bot: ⚙ npm run build (pending)',
      '  ⋯ bot: ⚙ npm run build → completed',
    ])
    expect(lineOf(out, /⚙ npm run build → completed/)).toBeLessThan(
      lineOf(out, /^\s+built$|↳ built/),
    )

    // Markdown rendered for a 60-column terminal: no markers, words whole, a hanging indent.
    chat.write(
      '@bot words ## Why it failed\\n- the **token** fixture expired yesterday at midnight, so every request was refused\\n- run `npm test` again\n',
    )
    await chat.waitFor(/• run `npm test` again/)
    const answer = chat.output().split('\n')
    const at = answer.findLastIndex((l) =>
      /bot \[agent, authorized by you\]: ↳ re box: @bot words/.test(l),
    )
    expect(at).toBeGreaterThanOrEqual(0)
    expect(answer.slice(at + 1, at + 5)).toEqual([
      '      Why it failed',
      '      • the token fixture expired yesterday at midnight, so',
      '        every request was refused',
      '      • run `npm test` again',
    ])
    for (const l of answer.slice(at + 1, at + 5)) expect(l.length).toBeLessThanOrEqual(60)

    // Cancelled after streaming: what it said is kept above the cancel line.
    const q = await ask(home, '@bot stream-hang 3')
    await chat.waitFor(/⋯ bot is working on it…/)
    await expect
      .poll(async () => (await runKith(['status', '--json'], { home })).stdout, { timeout: 20_000 })
      .toMatch(/"state": "working"/)
    expect((await runKith(['cancel', '#ops', 'bot'], { home })).code).toBe(0)
    expect((await threadedUnder(home, q))[0]!.event.content).toBe(
      'chunk 1 chunk 2 chunk 3\n\n⏹ bot: turn cancelled (what it said before is above)',
    )
    chat.write('/quit\n')
    expect(await chat.exit).toBe(0)
    watch.child.kill('SIGTERM')
  })
})
