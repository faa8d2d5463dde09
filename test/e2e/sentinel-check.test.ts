import { join } from 'node:path'
import { generateSecretKey } from 'nostr-tools/pure'
import { describe, expect, it } from 'vitest'
import { makeFleetSetting } from '../../src/events/e2e-setting.js'
import { publicKeyOf, signEvent } from '../../src/events/event.js'
import { initIdentity } from '../../src/identity/keys.js'
import type { KithNode } from '../../src/node/kith-node.js'
import { laptopAndDevbox, startNodeProcess } from '../helpers/cli.js'
import { startInProcessNode } from '../helpers/in-process-node.js'
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

/** An in-process node of a fleet whose founder signed "off" (a plain fleet, decided). */
async function plainInProcessNode(): Promise<{ home: string; node: KithNode }> {
  const home = join(tempDir(), 'desk')
  const ownerSk = generateSecretKey()
  initIdentity({ home, name: 'desk', ownerSecret: ownerSk })
  const node = await startInProcessNode({ home, embedPort: 0, verifyWorkers: 0 })
  const now = Math.floor(Date.now() / 1000)
  await node.intake([signEvent(makeFleetSetting(publicKeyOf(ownerSk), false, now), ownerSk)])
  expect(node.status().encrypt).toBe(false)
  return { home, node }
}

describe('the sentinel check on an in-process node (issue 29; test/helpers/in-process-node.ts)', () => {
  it('a sealed fleet: its sentinel reaches its embedded hub sealed, and the text is not there', async () => {
    const home = join(tempDir(), 'desk')
    const ownerSk = generateSecretKey()
    initIdentity({ home, name: 'desk', ownerSecret: ownerSk })
    const node = await startInProcessNode({ home, embedPort: 0, verifyWorkers: 0 })
    const now = Math.floor(Date.now() / 1000)
    await node.intake([signEvent(makeFleetSetting(publicKeyOf(ownerSk), true, now), ownerSk)])
    expect(node.status().encrypt).toBe(true)
    await node.stop()
    expect(scanHub('again', storeFiles(join(home, 'hub.db')))).toBe(1)
  })

  it('an in-process node of a plain fleet its file does not declare fails the check at its stop', async () => {
    const { node } = await plainInProcessNode()
    await expect(node.stop()).rejects.toThrow(/does not seal at the end of the test.*plainFleets/)
  })

  it('a plain fleet declared on purpose: a sentinel it leaks is caught in its embedded hub', async () => {
    const { home, node } = await plainInProcessNode()
    await expect
      .poll(() => node.status().hubs.map((h) => h.state), { timeout: 10_000 })
      .toEqual(['live'])
    // Sent as a sealed fleet's node would, in a fleet that does not seal: a leak on purpose.
    const leaked = await sendSentinel(home)
    await expect(node.stop()).rejects.toThrow(
      new RegExp(`plaintext in a hub file: ${leaked.text} .*hub\\.db`),
    )
    forgetSentinels()
  })
})
