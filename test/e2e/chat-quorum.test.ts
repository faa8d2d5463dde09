import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { laptopAndDevbox, setupKith, spawnKith, startNodeProcess } from '../helpers/cli.js'
import { init } from '../helpers/pair-up.js'
import { startEndpoint } from '../helpers/push-service.js'
import { tempDir } from '../helpers/tmp.js'

// kith chat and a quorum card (issue 33), through a real `kith chat` process: the card says how
// many people it needs; an allow is answered with the tally ("1 of 2 — waiting for another
// approver"), the card stays open, and the same person's second allow is refused with the tally.

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

describe('kith chat shows a quorum card and its tally', { timeout: 150_000 }, () => {
  it('a card needing 2 people: one allow shows 1 of 2, the card stays open, a second allow by the same person is refused', async () => {
    const home = join(tempDir(), 'h')
    await init(home, 'box')
    const add = await setupKith(
      [
        'agent',
        'add',
        'deploy',
        '--quorum',
        '2',
        '--for',
        'execute',
        '--',
        process.execPath,
        fakeAgent,
      ],
      { home },
    )
    expect(add.code, add.stderr).toBe(0)
    // A webhook for cards: the node's notification of a quorum card says its tally too.
    const hook = await startEndpoint({ answer: () => 200 })
    const notify = await setupKith(['notify', 'add', 'webhook', `${hook.url}/h`, '--on', 'cards'], {
      home,
    })
    expect(notify.code, notify.stderr).toBe(0)
    await startNodeProcess(home, ['--port', '0'])
    const chat = spawnKith(['chat', '#ops'], home)
    await chat.waitFor(/── #ops ──/)
    chat.write('@deploy permission-execute deploy prod\n')
    await chat.waitFor(/\[card 1\] deploy asks to run: deploy prod \(execute\)/)
    await chat.waitFor(
      /👥 needs 2 people to allow it \(two devices of one person count once\); the tally follows/,
    )
    expect((await hook.nth(0, 30_000)).body.toString()).toContain(
      '👥 0 of 2 — waiting for 2 more approvers',
    )
    chat.write('/allow 1\n')
    await chat.waitFor(/answered card 1 \(deploy: deploy prod\) with Allow/)
    // The host's tally, threaded under the prompt, as every surface shows it.
    await chat.waitFor(
      /deploy[^\n]*: ↳ ✓ box allowed "deploy prod": 1 of 2 — waiting for another approver/,
    )
    // Still open: one person's allow is not two; /cards says who allowed and what is missing.
    chat.write('/cards\n')
    await chat.waitFor(
      /\[card 1\] deploy: deploy prod \(execute\)[^\n]*\n {2}👥 needs 2 people: 1 of 2 — waiting for another approver \(allowed by \S+: you\)/,
    )
    chat.write('/allow 1\n')
    await chat.waitFor(
      /⚠ card 1 not answered: [^\n]*you already allowed it \(1 of 2 — waiting for another approver\)/,
    )
    expect(chat.output()).not.toMatch(/permission: selected/)
    chat.write('/quit\n')
    expect(await chat.exit).toBe(0)
  })
})

describe('a quorum card’s tally does not end its turn in kith chat', { timeout: 150_000 }, () => {
  it('after "1 of 2" the turn still waits: its host going offline is said', async () => {
    const dir = tempDir()
    const { laptop, devbox } = await laptopAndDevbox(dir)
    const add = await setupKith(
      [
        'agent',
        'add',
        'deploy',
        '--quorum',
        '2',
        '--for',
        'execute',
        '--',
        process.execPath,
        fakeAgent,
      ],
      { home: devbox },
    )
    expect(add.code, add.stderr).toBe(0)
    const nd = await startNodeProcess(devbox)
    const nl = await startNodeProcess(laptop)
    await nd.waitFor(/linked to/)
    await nl.waitFor(/linked to/)
    const chat = spawnKith(['chat', '#ops'], laptop)
    await chat.waitFor(/── #ops ──/)
    chat.write('@deploy permission-execute deploy prod\n')
    await chat.waitFor(/\[card 1\] deploy asks to run: deploy prod/, 40_000)
    chat.write('/allow 1\n')
    await chat.waitFor(/1 of 2 — waiting for another approver/, 40_000)
    // The agent still waits for a second person: its host stopping is news to this chat.
    await nd.stop()
    await chat.waitFor(/⚠ deploy's host \S+ went offline: its turn cannot finish/, 60_000)
    chat.write('/quit\n')
    expect(await chat.exit).toBe(0)
  })
})
