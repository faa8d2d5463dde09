// After a device is revoked, a browser paired afterwards tells the same history as the devices
// that saw it happen: the revoked device's prompts, and the cards it answered with its answer.
import { nip19 } from 'nostr-tools'
import { describe, expect, it } from 'vitest'
import { runKith } from '../helpers/cli.js'
import { snap } from '../helpers/browser.js'
import { pairedBrowser, pairPage, say } from '../helpers/web-fleet.js'

describe(
  'history after a revocation, in the web app (real hub, nodes, Chromium)',
  { timeout: 300_000 },
  () => {
    it("a re-paired browser shows the revoked phone's prompt and the card it allowed as allowed", async () => {
      const f = await pairedBrowser({ encrypt: true })
      try {
        const { page } = f
        await say(page, '@claude edit src/koala.txt')
        const card = page.locator('article.permission.open', { hasText: 'Edit src/koala.txt' })
        await card.waitFor({ timeout: 30_000 })
        await card.getByRole('button', { name: 'Allow' }).click()
        await page
          .locator('article.message.agent', { hasText: 'Fixed the typo' })
          .waitFor({ timeout: 30_000 })
        // The person revokes the phone (lost, say) from the laptop, and pairs the browser again.
        const status = await runKith(['status', '--json'], { home: f.laptop })
        const { devices } = JSON.parse(status.stdout) as {
          devices: { name: string; pubkey: string }[]
        }
        const phone = devices.find((d) => d.name === 'phone')!.pubkey
        const revoked = await runKith(['revoke', nip19.npubEncode(phone), '--yes'], {
          home: f.laptop,
        })
        expect(revoked.code, revoked.stderr).toBe(0)
        await page
          .getByText(/removed from the fleet|revoked/)
          .first()
          .waitFor({ timeout: 30_000 })
        const again = await pairPage(f.browser, f.web, f.laptop, 'phone2')
        const p2 = again.page
        // The reply is there; so is the prompt it answers, and the card shows what was decided.
        await p2
          .locator('article.message.agent', { hasText: 'Fixed the typo' })
          .waitFor({ timeout: 30_000 })
        await p2
          .locator('article.message', { hasText: '@claude edit src/koala.txt' })
          .first()
          .waitFor()
        const answered = p2.locator('article.permission', { hasText: 'Edit src/koala.txt' })
        await answered.waitFor()
        expect(await answered.locator('.decided').textContent()).toBe('Allow once (by phone)')
        await snap(p2, 'history-after-revocation')
        expect(again.problems).toEqual([])
      } finally {
        await f.stop()
      }
    })
  },
)
