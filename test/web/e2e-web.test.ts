/// <reference lib="dom" />
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { laptopAndDevbox, runKith, setupKith, spawnKith, startNodeProcess } from '../helpers/cli.js'
import { launchChromium, snap, watchedPage } from '../helpers/browser.js'
import { codeOf, sasLine } from '../helpers/pair-up.js'
import { ask } from '../helpers/node-chat.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

/** `kith log '#ops' --json` on the laptop: the texts, as a person would read them. */
async function laptopTexts(home: string): Promise<string[]> {
  const r = await runKith(['log', '#ops', '--json'], { home })
  expect(r.code, r.stderr).toBe(0)
  return r.stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => (JSON.parse(l) as { content: string }).content)
}

async function say(page: Page, text: string): Promise<void> {
  const box = page.getByRole('textbox', { name: /^Message #/ }).first()
  await box.click()
  await box.pressSequentially(text)
  await box.press('Escape')
  await box.press('Enter')
}

describe(
  'the web app in a fleet that seals (kith-e2e/1, real hub, nodes and Chromium)',
  { timeout: 240_000 },
  () => {
    it('gets its person’s history keys, reads and writes sealed chat, answers a card; the hub holds only ciphertext', async () => {
      const dir = tempDir()
      const { hub, laptop, devbox } = await laptopAndDevbox(dir)
      const added = await setupKith(['agent', 'add', 'claude', '--', process.execPath, fakeAgent], {
        home: devbox,
      })
      expect(added.code, added.stderr).toBe(0)
      expect((await runKith(['fleet', 'encrypt', 'on'], { home: laptop })).code).toBe(0)
      const nd = await startNodeProcess(devbox, ['--no-web', '--permission-timeout', '120'])
      const nl = await startNodeProcess(laptop, ['--web-port', '0'])
      await nd.waitFor(/linked to/)
      await nl.waitFor(/linked to/)
      const ready = JSON.parse(await nl.waitFor(/"event":"ready"/)) as { web: string }
      await expect
        .poll(
          async () => (await runKith(['fleet', 'encrypt', '--json'], { home: devbox })).stdout,
          {
            timeout: 20_000,
          },
        )
        .toMatch(/"encrypt": true/)
      await ask(laptop, 'history koala before the browser')

      const browser = await launchChromium()
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
      const { page, problems } = await watchedPage(context)
      await page.goto(ready.web)
      const pair = spawnKith(['pair', '--name', 'phone'], laptop)
      const code = (await pair.waitFor(codeOf('kith join')))[1]!
      await page.getByLabel('Pairing code').fill(code)
      await page.getByRole('button', { name: 'Continue' }).click()
      await page.getByRole('button', { name: 'Join' }).click()
      const sasEl = page.getByLabel('six digits')
      await sasEl.waitFor({ timeout: 20_000 })
      expect((await sasEl.textContent())!.trim()).toBe((await pair.waitFor(sasLine))[1]!)
      await page.getByRole('button', { name: 'Same digits' }).click()
      pair.write('y\n')
      expect(await pair.exit, pair.output()).toBe(0)

      // History sealed before the browser existed, opened with keys from the laptop.
      await page.goto(`${ready.web}/#/c/ops`)
      await page.getByText('history koala before the browser').waitFor({ timeout: 30_000 })
      await say(page, 'hello jaguar from the browser')
      await expect
        .poll(() => laptopTexts(laptop), { timeout: 20_000 })
        .toContain('hello jaguar from the browser')
      await say(page, '@claude echo puffin reply')
      await page
        .locator('article.message.agent', { hasText: 'puffin reply' })
        .waitFor({ timeout: 30_000 })
      await say(page, '@claude permission rm -rf lynx-den')
      const card = page.locator('article.permission.open')
      // The card's title and its preview of the command both name it.
      await card.getByText('rm -rf lynx-den').first().waitFor({ timeout: 30_000 })
      await card.getByRole('button', { name: 'Allow', exact: true }).click()
      await page
        .locator('article.message.agent', { hasText: 'permission: selected allow' })
        .waitFor({ timeout: 30_000 })
      // The top bar says the fleet is sealed.
      expect(await page.locator('header .status.sealed').textContent()).toBe('sealed')
      await snap(page, 'sealed-chat')
      expect(problems).toEqual([])

      await context.close()
      await nl.stop()
      await nd.stop()
      await hub.stop()
      const raw = [join(dir, 'hub.db'), join(dir, 'hub.db-wal')]
        .filter((p) => existsSync(p))
        .map((p) => readFileSync(p).toString('latin1'))
        .join('\n')
      expect(raw).toContain('"e2e"')
      for (const s of ['koala', 'jaguar', 'puffin', 'lynx-den', 'selected allow'])
        expect(raw.includes(s), `the hub holds "${s}"`).toBe(false)
    })
  },
)
