import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { laptopAndDevbox, startNodeProcess } from '../helpers/cli.js'
import { history } from '../helpers/node-chat.js'
import {
  beforeNodeStops,
  forgetSentinels,
  scanHub,
  sendSentinel,
  sentinelChannel,
  storeFiles,
} from '../helpers/sentinel.js'
import { tempDir } from '../helpers/tmp.js'

// The test-wide sentinel check (test/helpers/sentinel.ts) is itself checked: it passes a sealed
// fleet and fails a plaintext one, at the node (a fleet that does not seal, undeclared) and at
// the hub (a sentinel in plaintext in its files). A check never seen failing proves nothing.

describe('the sentinel check (issue 29; real processes)', { timeout: 120_000 }, () => {
  it('a sealed fleet: the sentinel reaches the hub sealed, and its files do not hold the text', async () => {
    const dir = tempDir()
    const { hub, laptop } = await laptopAndDevbox(dir)
    const nl = await startNodeProcess(laptop)
    // The founder's node signs "on" once caught up (kith-e2e/1).
    await nl.waitFor(/no encryption setting: signed/)
    const checked = await beforeNodeStops(laptop)
    expect(checked).toHaveProperty('sent')
    const { text } = (checked as { sent: { text: string } }).sent
    await expect
      .poll(async () => (await history(laptop, sentinelChannel)).map((i) => i.event.content), {
        timeout: 20_000,
      })
      .toContain(text)
    await nl.stop('SIGKILL')
    await hub.stop()
    // The hub holds the sentinel's event (its id), and the text nowhere.
    expect(scanHub('again', storeFiles(join(dir, 'hub.db')))).toBe(1)
  })

  it('a plain fleet its file does not declare fails the check when its node stops', async () => {
    const { laptop } = await laptopAndDevbox(tempDir(), { plain: true })
    const nl = await startNodeProcess(laptop)
    await nl.waitFor(/linked to/)
    await expect(nl.stop()).rejects.toThrow(/does not seal at the end of the test.*plainFleets/)
  })

  it('a sentinel in plaintext in a hub file fails the check when the hub stops', async () => {
    const dir = tempDir()
    const { hub, laptop } = await laptopAndDevbox(dir, { plain: true })
    const nl = await startNodeProcess(laptop)
    await nl.waitFor(/linked to/)
    // Sent as a sealed fleet's node would, in a fleet that does not seal: a leak on purpose.
    const leaked = await sendSentinel(laptop)
    await nl.stop('SIGKILL')
    await expect(hub.stop()).rejects.toThrow(
      new RegExp(`plaintext in a hub file: ${leaked.text} .*hub\\.db`),
    )
    // Seen caught: the cleanup's scans must not catch it again.
    forgetSentinels()
  })
})
