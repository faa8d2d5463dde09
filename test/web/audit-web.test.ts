// The web app's Audit view (issue 33): what a phone shows of kith audit over its own history.
import { describe, expect, it } from 'vitest'
import { snap } from '../helpers/browser.js'
import { pairedBrowser, say } from '../helpers/web-fleet.js'

describe('the Audit view (real hub, nodes, the fake agent, Chromium)', { timeout: 240_000 }, () => {
  it('shows the card the phone allowed under the agent policy in force, opened from the sealed history', async () => {
    const f = await pairedBrowser({ encrypt: true })
    try {
      const { page } = f
      await say(page, '@claude permission rm -rf build')
      const card = page.locator('article.permission.open', { hasText: 'rm -rf build' })
      await card.waitFor({ timeout: 30_000 })
      await card.getByRole('button', { name: 'Allow', exact: true }).click()
      await page
        .locator('article.message.agent', { hasText: 'permission: selected allow' })
        .waitFor({ timeout: 30_000 })
      await page.getByRole('link', { name: 'Audit' }).click()
      const turn = page.locator('.audit-turns li', { hasText: 'rm -rf build' })
      await turn.waitFor({ timeout: 30_000 })
      const text = (await turn.textContent()) ?? ''
      // The policy the devbox published, the card, and the phone's own decision as an approver's.
      expect(text).toMatch(/policy [0-9a-f]{8}: allow owner, approvers owner, ask/)
      expect(text).toMatch(/card [0-9a-f]{8} execute "rm -rf build" input [0-9a-f]{8}: allowed/)
      expect(text).toMatch(/allow_once by phone/)
      expect(text).not.toMatch(/not an approver/)
      expect(await turn.getAttribute('data-flags')).toBe('')
      // Sealed in this fleet: read with the phone's keys, and said so.
      expect(await page.locator('.audit-summary').textContent()).toMatch(/opened here/)
      await snap(page, 'audit')
      expect(f.problems).toEqual([])
    } finally {
      await f.stop()
    }
  })
})
