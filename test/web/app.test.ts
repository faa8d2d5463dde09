/// <reference lib="dom" />
// Callbacks given to page.evaluate run in the browser.
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { laptopAndDevbox, runKith, setupKith, spawnKith, startNodeProcess } from '../helpers/cli.js'
import { launchChromium, snap, watchedPage } from '../helpers/browser.js'
import { codeOf, sasLine } from '../helpers/pair-up.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

interface LogLine {
  id: string
  content: string
  tags: string[][]
  from: { name: string; role: string }
}

/** `kith log '#ops' --json` on the laptop, as a person would read it. */
async function laptopLog(home: string, channel = 'ops'): Promise<LogLine[]> {
  const r = await runKith(['log', `#${channel}`, '--json'], { home })
  expect(r.code, r.stderr).toBe(0)
  return r.stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as LogLine)
}

/** Types into the composer and sends with Enter, as a person would. */
async function say(page: Page, text: string): Promise<void> {
  const box = page.getByRole('textbox', { name: /^Message #/ }).first()
  await box.click()
  await box.pressSequentially(text)
  await box.press('Enter')
}

describe(
  'the browser as a paired device (real hub, devbox node hosting the fake agent, laptop CLI, Chromium)',
  { timeout: 240_000 },
  () => {
    it('pairs with the 6 digits, posts, watches an agent work, approves its card, and is revoked', async () => {
      const { laptop, devbox } = await laptopAndDevbox(tempDir())
      const added = await setupKith(['agent', 'add', 'claude', '--', process.execPath, fakeAgent], {
        home: devbox,
      })
      expect(added.code, added.stderr).toBe(0)
      const nd = await startNodeProcess(devbox, ['--no-web', '--permission-timeout', '120'])
      const nl = await startNodeProcess(laptop, ['--web-port', '0'])
      await nd.waitFor(/linked to/)
      await nl.waitFor(/linked to/)
      const ready = JSON.parse(await nl.waitFor(/"event":"ready"/)) as { web: string }
      expect(ready.web).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      const status = await runKith(['status'], { home: laptop })
      expect(status.stdout).toContain(`web     ${ready.web} (kith open)`)

      const browser = await launchChromium()
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
      const { page, problems } = await watchedPage(context)
      await page.goto(ready.web)
      await expect
        .poll(() => page.getByRole('heading', { name: 'Pair this browser' }).count())
        .toBe(1)
      await snap(page, 'pairing')

      // Pairing: the laptop shows a code; the browser takes it, both show the same 6 digits.
      const pair = spawnKith(['pair', '--name', 'phone'], laptop)
      const code = (await pair.waitFor(codeOf('kith join')))[1]!
      await page.getByLabel('Pairing code').fill(code)
      await page.getByRole('button', { name: 'Continue' }).click()
      await expect.poll(() => page.getByText(/Join the fleet of laptop/).count()).toBe(1)
      // It says whose machine served the page: the laptop's own node.
      expect(await page.getByText('This page was served by the node laptop').count()).toBe(1)
      await page.getByRole('button', { name: 'Join' }).click()
      const sasEl = page.getByLabel('six digits')
      await sasEl.waitFor({ timeout: 20_000 })
      const shown = (await sasEl.textContent())!.trim()
      const onLaptop = (await pair.waitFor(sasLine))[1]!
      expect(shown).toBe(onLaptop)
      await snap(page, 'pairing-digits')
      await page.getByRole('button', { name: 'Same digits' }).click()
      pair.write('y\n')
      expect(await pair.exit, pair.output()).toBe(0)
      expect(pair.output()).toMatch(/paired: phone npub1\w+ is now a device of this fleet/)
      await page.getByText(/live on 1 hub/).waitFor({ timeout: 20_000 })

      // A message from the browser reaches the laptop's kith log.
      await page.goto(`${ready.web}/#/c/ops`)
      await page.getByText(/live on 1 hub/).waitFor({ timeout: 20_000 })
      await say(page, 'hello from the browser')
      await expect
        .poll(
          async () => (await laptopLog(laptop)).find((l) => l.content === 'hello from the browser'),
          {
            timeout: 20_000,
          },
        )
        .toMatchObject({ from: { name: 'phone', role: 'device' } })

      // @mention completion, then the agent's streamed progress and its permission card.
      const box = page.getByRole('textbox', { name: 'Message #ops' })
      await box.click()
      await box.pressSequentially('@cl')
      await page.getByRole('option', { name: /@claude/ }).waitFor()
      // Frames as late as a busy phone's: what is typed right after the completion stays in order.
      await page.evaluate(() => {
        const w = window as unknown as { realRaf?: typeof requestAnimationFrame }
        w.realRaf = window.requestAnimationFrame.bind(window)
        window.requestAnimationFrame = (cb) => window.setTimeout(() => w.realRaf!(cb), 60)
      })
      await box.press('Tab')
      await box.pressSequentially('edit src/greeting.ts', { delay: 25 })
      expect(await box.inputValue()).toBe('@claude edit src/greeting.ts')
      await page.evaluate(() => {
        const w = window as unknown as { realRaf: typeof requestAnimationFrame }
        window.requestAnimationFrame = w.realRaf
      })
      await box.press('Enter')
      const progress = page.getByRole('region', { name: "claude's progress" })
      await progress.getByText('Edit src/greeting.ts').waitFor({ timeout: 30_000 })
      await progress.getByText('Fix the typo').waitFor()
      await progress.getByText(/the greeting says wrold/).waitFor()
      await expect.poll(() => progress.locator('.diff .add').textContent()).toContain('hello world')
      expect(await progress.locator('.diff .del').textContent()).toContain('hello wrold')
      const card = page.locator('article.permission.open')
      await card.getByText('Edit src/greeting.ts').waitFor({ timeout: 20_000 })
      await expect.poll(() => progress.getByText('awaiting permission').count()).toBe(1)
      await snap(page, 'chat-agent-card')

      // One click: a kind-4143 signed by the browser's key; the agent goes on and answers.
      await card.getByRole('button', { name: 'Allow', exact: true }).click()
      const answer = page.locator('article.message.agent', { hasText: 'Fixed the typo' })
      await answer.waitFor({ timeout: 30_000 })
      expect(await answer.locator('pre code').textContent()).toContain(
        '+const greeting = "hello world"',
      )
      expect(await answer.locator('strong').textContent()).toBe('run the tests')
      await page.locator('article.permission', { hasText: 'Allow once (by phone)' }).waitFor()
      const log = await laptopLog(laptop)
      expect(log.find((l) => l.content.startsWith('Fixed the typo'))).toMatchObject({
        from: { name: 'claude', role: 'agent' },
      })
      await snap(page, 'chat-answered')
      // A fleet founded with an imported owner key is sealed once its founder caught up: it says so.
      await expect.poll(() => page.locator('header .status.sealed').count()).toBe(1)

      // A reply from the browser is threaded (NIP-10): root the prompt, parent the agent's answer.
      const reply = page.locator('article.message.agent', { hasText: 'Fixed the typo' })
      await reply.getByRole('button', { name: 'Reply' }).click()
      await page.getByText(/^Replying to claude/).waitFor()
      await say(page, 'thanks, @claude echo tests are green')
      const before = await laptopLog(laptop)
      const promptId = before.find((l) => l.content === '@claude edit src/greeting.ts')!.id
      const answerId = before.find((l) => l.content.startsWith('Fixed the typo'))!.id
      await expect
        .poll(
          async () =>
            (await laptopLog(laptop)).find(
              (l) => l.content === 'thanks, @claude echo tests are green',
            )?.tags,
          { timeout: 20_000 },
        )
        .toEqual(
          expect.arrayContaining([
            ['e', promptId, '', 'root'],
            ['e', answerId, '', 'reply'],
          ]),
        )
      // The thread: the prompt, the card, the answer, the reply and the agent's answer to it.
      await page
        .locator(`article.message[data-id="${promptId}"]`)
        .getByRole('link', { name: /in thread/ })
        .click()
      const threadPane = page.getByRole('region', { name: 'Thread' })
      await threadPane
        .getByText('you said: thanks, echo tests are green')
        .waitFor({ timeout: 20_000 })
      await threadPane.getByText('Fixed the typo').first().waitFor()
      await snap(page, 'thread')
      await threadPane.getByRole('button', { name: 'Close' }).click()

      // Stop: a kind-4144 naming the open prompt; the hosting node cancels the turn. (The turn
      // streams a chunk first, so the page knows it runs on the devbox, not only that the agent
      // is busy, before it is stopped.)
      await say(page, '@claude stream-hang 1')
      const hanging = page.getByRole('region', { name: "claude's progress" }).last()
      await hanging.getByText('chunk 1').waitFor({ timeout: 20_000 })
      await hanging.getByRole('button', { name: 'Stop' }).click()
      await page
        .locator('article.message.agent', { hasText: '⏹ claude: turn cancelled' })
        .first()
        .waitFor({ timeout: 30_000 })

      // Interrupt: a prompt that stops the running turn it names and runs next.
      await say(page, '@claude stream-hang 2')
      await page
        .getByRole('region', { name: "claude's progress" })
        .last()
        .getByText('chunk 2')
        .waitFor({ timeout: 20_000 })
      await page.getByLabel("interrupt the mentioned agent's turn").check()
      await say(page, '@claude echo interrupted you')
      await page
        .locator('article.message.agent', { hasText: 'interrupted you' })
        .waitFor({ timeout: 30_000 })
      await expect
        .poll(async () =>
          (await laptopLog(laptop)).filter((l) =>
            /^⏹ claude: turn cancelled|\n\n⏹ claude: turn cancelled/.test(l.content),
          ),
        )
        .toHaveLength(2)

      // The network goes away and comes back: the browser drops its socket, says it is offline,
      // then reconnects by itself and catches up what was posted meanwhile.
      await context.setOffline(true)
      await page
        .getByRole('status')
        .getByText(/Offline: no network/)
        .waitFor()
      const away = await runKith(['send', '#ops', 'posted while the browser was away', '--json'], {
        home: laptop,
      })
      expect(JSON.parse(away.stdout)).toMatchObject({ delivery: { ok: true } })
      await context.setOffline(false)
      await page.getByText('posted while the browser was away').waitFor({ timeout: 30_000 })
      await expect.poll(() => page.getByRole('status').count()).toBe(0)

      // Unread counts per channel: the laptop posts in #dev while the browser reads #ops.
      expect((await runKith(['send', '#dev', 'deploy at 5'], { home: laptop })).code).toBe(0)
      expect((await runKith(['send', '#dev', 'or 6'], { home: laptop })).code).toBe(0)
      const dev = page.getByRole('link', { name: /#\s*dev/ })
      await dev.getByLabel('2 unread').waitFor({ timeout: 20_000 })
      await dev.click()
      await page.getByText('or 6').waitFor()
      expect(await dev.getByLabel(/unread/).count()).toBe(0)

      // The fleet: people, devices and agents with their state and what each may do.
      await page.getByRole('link', { name: 'Fleet' }).click()
      const fleet = page.getByRole('main')
      await fleet.getByText('this browser', { exact: true }).waitFor()
      for (const name of ['laptop', 'devbox', 'phone', 'claude'])
        expect(await fleet.locator('.key .name', { hasText: name }).count()).toBeGreaterThan(0)
      // The machines whose nodes run are online (their presence, kind 24141), not "no presence seen".
      for (const name of ['laptop', 'devbox'])
        await fleet
          .locator('li.key.device', { has: page.locator('.name', { hasText: name }) })
          .locator('.state.online')
          .waitFor({ timeout: 20_000 })
      // Reloaded, the page said goodbye (offline) and hello again: the nodes answer at once, so
      // they show online again well before their next one-minute presence.
      await page.reload()
      await page.getByText(/live on 1 hub/).waitFor({ timeout: 30_000 })
      await page.getByRole('link', { name: 'Fleet' }).click()
      for (const name of ['laptop', 'devbox'])
        await fleet
          .locator('li.key.device', { has: page.locator('.name', { hasText: name }) })
          .locator('.state.online')
          .waitFor({ timeout: 10_000 })
      // The agent's sessions as the devbox reports them (kind 34150), each opening its thread.
      const sessions = fleet.getByRole('region', { name: 'Sessions' })
      const prompted = sessions.locator(`a[href="#/c/ops/t/${promptId}"]`)
      await prompted.waitFor({ timeout: 20_000 })
      expect(await prompted.textContent()).toMatch(/^claude on devbox · #ops/)
      await snap(page, 'fleet')

      // A phone-size screen: one pane at a time, nothing wider than the screen.
      await page.setViewportSize({ width: 390, height: 844 })
      await page.goto(`${ready.web}/#/`)
      await page.getByRole('link', { name: /#\s*ops/ }).waitFor()
      await snap(page, 'phone-channels')
      await page.getByRole('link', { name: /#\s*ops/ }).click()
      await page.locator('article.message.agent', { hasText: 'Fixed the typo' }).waitFor()
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(
        390,
      )
      await expect
        .poll(() => page.getByRole('textbox', { name: 'Message #ops' }).isVisible())
        .toBe(true)
      await snap(page, 'phone-chat')

      // Revoked from the laptop: cut off at once, and it says so plainly.
      const revoke = await runKith(['device', 'revoke', 'phone', '--yes'], { home: laptop })
      expect(revoke.code, revoke.stderr).toBe(0)
      await page
        .getByRole('heading', { name: 'This browser was removed from the fleet' })
        .waitFor({ timeout: 30_000 })
      await snap(page, 'phone-removed')
      expect(problems).toEqual([])
    })

    it("refuses to pair into a person's fleet from an app served by another person's hub", async () => {
      // Carol runs a hub for the team and serves the app at its origin (--web).
      const carol = tempDir()
      expect((await setupKith(['init', '--name', 'carol'], { home: carol })).code).toBe(0)
      const hub = spawnKith(['hub', '--port', '0', '--web'], carol)
      const webAt = (await hub.waitFor(/web app at (http:\/\/127\.0\.0\.1:\d+)\//))[1]!
      // Alice pairs a phone; the phone opened the app at Carol's hub.
      const alice = tempDir()
      expect((await setupKith(['init', '--name', 'alice'], { home: alice })).code).toBe(0)
      const node = await startNodeProcess(alice, ['--port', '0', '--no-web'])
      await node.waitFor(/"event":"ready"/)
      const pair = spawnKith(['pair', '--name', 'phone'], alice)
      const code = (await pair.waitFor(codeOf('kith join')))[1]!
      const browser = await launchChromium()
      const { page } = await watchedPage(await browser.newContext())
      await page.goto(`${webAt}/`)
      await page.getByLabel('Pairing code').fill(code)
      await page.getByRole('button', { name: 'Continue' }).click()
      const refusal = page.getByText(
        /This page was served by the hub carol, a machine of another person, not of alice/,
      )
      await refusal.waitFor({ timeout: 20_000 })
      expect(await page.getByRole('button', { name: 'Join' }).count()).toBe(0)
      // The laptop's pairing never heard from this browser: no digits were shown there.
      expect(pair.output()).not.toMatch(sasLine)
      pair.child.kill('SIGTERM')
      await node.stop()
      hub.child.kill('SIGTERM')
      await hub.exit
    })
  },
)
