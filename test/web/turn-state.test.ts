// What a phone shows of a turn that can no longer finish: its host went away mid-turn, or its
// agent was removed. Never "working" with a Stop that nobody is there to carry out.
import { describe, expect, it } from 'vitest'
import { runKith } from '../helpers/cli.js'
import { snap } from '../helpers/browser.js'
import { pairedBrowser, say } from '../helpers/web-fleet.js'

describe(
  'a turn whose host went away, in the web app (real hub, nodes, Chromium)',
  { timeout: 240_000 },
  () => {
    it('shows "host offline" without a Stop once the devbox dies mid-turn, then "removed" once the agent is revoked', async () => {
      // The devbox says it is up every second: silent for 2.5 s, it counts as gone.
      const f = await pairedBrowser({ devboxArgs: ['--presence-interval', '1'] })
      try {
        const { page } = f
        // As a person sees it first: the devbox online on the Fleet page (this page has heard
        // its presence, so it knows where claude runs), then back to #ops.
        await page.getByRole('link', { name: 'Fleet' }).click()
        await page
          .getByRole('main')
          .locator('li.key.device', { has: page.locator('.name', { hasText: 'devbox' }) })
          .locator('.state.online')
          .waitFor({ timeout: 30_000 })
        await page.goBack()
        await say(page, '@claude hang')
        const turn = page.getByRole('region', { name: "claude's progress" })
        await turn.getByRole('button', { name: 'Stop' }).waitFor({ timeout: 30_000 })
        expect(await turn.locator('.state').textContent()).toBe('working')
        // The devbox dies as a machine does: no offline presence, nothing more from it.
        await f.nd.stop('SIGKILL')
        await turn
          .getByText('devbox went offline: this turn cannot finish until it is back')
          .waitFor({
            timeout: 30_000,
          })
        expect(await turn.locator('.state').textContent()).toBe('host offline')
        expect(await turn.getByRole('button', { name: 'Stop' }).count()).toBe(0)
        await snap(page, 'turn-host-offline')
        // The agent is removed meanwhile: its turn is over.
        const list = await runKith(['agent', 'list', '--json'], { home: f.devbox })
        const { agents } = JSON.parse(list.stdout) as { agents: { name: string; npub: string }[] }
        const npub = agents.find((a) => a.name === 'claude')!.npub
        const revoked = await runKith(['revoke', npub, '--yes'], { home: f.laptop })
        expect(revoked.code, revoked.stderr).toBe(0)
        await turn.getByText('claude was removed from the fleet: this turn is over').waitFor({
          timeout: 30_000,
        })
        expect(await turn.getByRole('button', { name: 'Stop' }).count()).toBe(0)
        expect(f.problems).toEqual([])
      } finally {
        await f.stop()
      }
    })
  },
)
