// After pairing, the web app opens where the fleet talks (the channel with the newest messages,
// unread on this new device), not an empty #general it chose before catching up.
import { describe, expect, it } from 'vitest'
import { laptopAndDevbox, runKith, startNodeProcess } from '../helpers/cli.js'
import { launchChromium } from '../helpers/browser.js'
import { pairPage } from '../helpers/web-fleet.js'
import { tempDir } from '../helpers/tmp.js'

describe('the first channel a newly paired browser opens (real hub, node, Chromium)', () => {
  it(
    'opens the channel with unread messages once caught up, and remembers it',
    { timeout: 180_000 },
    async () => {
      const { hub, laptop } = await laptopAndDevbox(tempDir())
      const nl = await startNodeProcess(laptop, ['--web-port', '0'])
      try {
        await nl.waitFor(/linked to/)
        const { web } = JSON.parse(await nl.waitFor(/"event":"ready"/)) as { web: string }
        const sent = await runKith(['send', '--new', '#deploys', 'v1.2 is out on staging'], {
          home: laptop,
        })
        expect(sent.code, sent.stderr).toBe(0)
        const browser = await launchChromium()
        const { page, problems } = await pairPage(browser, web, laptop, 'phone', { openOps: false })
        await page
          .locator('article.message', { hasText: 'v1.2 is out on staging' })
          .waitFor({ timeout: 30_000 })
        expect(new URL(page.url()).hash).toBe('#/c/deploys')
        // A reload opens it again (the one last opened).
        await page.reload()
        await page
          .locator('article.message', { hasText: 'v1.2 is out on staging' })
          .waitFor({ timeout: 30_000 })
        expect(new URL(page.url()).hash).toBe('#/c/deploys')
        expect(problems).toEqual([])
      } finally {
        await nl.stop()
        await hub.stop()
      }
    },
  )
})
