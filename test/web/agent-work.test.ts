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

    it('a reloaded page still shows what an agent did: its tool calls, their output and diff', async () => {
      const f = await pairedBrowser({ encrypt: true })
      try {
        const { page } = f
        await say(page, '@claude worked src/emu.ts')
        await page
          .locator('article.message.agent', { hasText: 'worked' })
          .waitFor({ timeout: 30_000 })
        // Observer frames are never stored: after a reload only the answer's record remains.
        await page.reload()
        await page
          .locator('article.message.agent', { hasText: 'worked' })
          .waitFor({ timeout: 30_000 })
        await page.getByRole('button', { name: /claude: 2 tool calls/ }).click()
        const turn = page.getByRole('region', { name: "claude's progress" })
        await turn.getByText('npm test').waitFor()
        expect(await turn.locator('.tool-output').first().textContent()).toContain('12 passing')
        await turn.getByText('Edit src/emu.ts').waitFor()
        expect(await turn.locator('.diff .del').textContent()).toContain(
          '-const greeting = "hello wrold"',
        )
        expect(await turn.locator('.diff .add').textContent()).toContain(
          '+const greeting = "hello world"',
        )
        expect(await turn.locator('.tool.completed').count()).toBe(2)
        await snap(page, 'turn-after-reload')
        expect(f.problems).toEqual([])
      } finally {
        await f.stop()
      }
    })
  },
)
