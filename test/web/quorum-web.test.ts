// A quorum card in the web app (issue 33): the tally on the card, and a person allows it once.
import { describe, expect, it } from 'vitest'
import { snap } from '../helpers/browser.js'
import { runKith } from '../helpers/cli.js'
import { pairedBrowser, say } from '../helpers/web-fleet.js'

describe(
  'a two-person card in the web app (real hub, nodes, the fake agent, Chromium)',
  { timeout: 240_000 },
  () => {
    it('shows "1 of 2 — waiting for another approver" after the phone allows; the person cannot allow twice, from this or another of their devices', async () => {
      const f = await pairedBrowser({
        encrypt: true,
        agentFlags: ['--quorum', '2', '--for', 'execute'],
      })
      try {
        const { page } = f
        await say(page, '@claude permission-execute deploy prod')
        const card = page.locator('article.permission.open', { hasText: 'deploy prod' })
        await card.waitFor({ timeout: 30_000 })
        await card.getByText('👥 needs 2 people: 0 of 2 — waiting for 2 more approvers').waitFor()
        // No "always" on a quorum card: it would let the next such call run on one person's word.
        expect(await card.getByRole('button', { name: /always/i }).count()).toBe(0)
        await card.getByRole('button', { name: 'Allow', exact: true }).click()
        // The card stays open for the phone, which counted once.
        await card
          .getByText(/1 of 2 — waiting for another approver \(allowed by you\)/)
          .waitFor({ timeout: 30_000 })
        expect(await card.getAttribute('data-quorum')).toBe('1/2')
        const allow = card.getByRole('button', { name: 'Allow', exact: true })
        expect(await allow.isDisabled()).toBe(true)
        expect(await allow.getAttribute('title')).toBe('you already allowed it')
        // The same person's laptop is refused: one person is one approver.
        const id = await card.getAttribute('data-request')
        const again = await runKith(['permit', id!, 'allow'], { home: f.laptop })
        expect(again.code).not.toBe(0)
        expect(again.stderr).toMatch(/already allowed/)
        expect(await card.getAttribute('data-quorum')).toBe('1/2')
        await snap(page, 'quorum-card')
        expect(f.problems).toEqual([])
      } finally {
        await f.stop()
      }
    })
  },
)
