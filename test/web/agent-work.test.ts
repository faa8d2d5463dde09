// What a phone shows of an agent's work: the change a card asks for before anyone answers it.
import { describe, expect, it } from 'vitest'
import { snap } from '../helpers/browser.js'
import { pairedBrowser, say } from '../helpers/web-fleet.js'

describe(
  'agent work in the web app (real hub, nodes, the fake agent, Chromium)',
  { timeout: 240_000 },
  () => {
    it("an edit's card shows its diff before it is answered, long ones folded behind Show all", async () => {
      const f = await pairedBrowser({ encrypt: true })
      try {
        const { page } = f
        // 30 changed lines: a diff of 63 lines, under the host's bound, longer than the fold.
        await say(page, '@claude edit src/koala.txt 30')
        const card = page.locator('article.permission.open', { hasText: 'Edit src/koala.txt' })
        await card.waitFor({ timeout: 30_000 })
        const preview = card.getByRole('figure', { name: 'what it will do' })
        await preview.getByText('--- a/src/koala.txt').waitFor()
        expect(await preview.locator('.del').first().textContent()).toBe('-line 1 hello wrold\n')
        // Folded: the removals come first (as diff -u shows them); the additions only once the
        // person asks for all of it.
        expect(await preview.locator('.add').count()).toBe(0)
        await snap(page, 'card-preview')
        await preview.getByRole('button', { name: 'Show all 63 lines' }).click()
        await preview.getByText('+line 30 hello world').waitFor()
        expect(await preview.locator('.add').first().textContent()).toBe('+line 1 hello world\n')
        // Then the person decides, having seen the change.
        await card.getByRole('button', { name: 'Reject' }).click()
        await page
          .locator('article.message.agent', { hasText: /Left src\/koala\.txt as it was/ })
          .waitFor({ timeout: 30_000 })
        expect(f.problems).toEqual([])
      } finally {
        await f.stop()
      }
    })
  },
)
