import { fileURLToPath } from 'node:url'
import { expect } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import {
  laptopAndDevbox,
  runKith,
  setupKith,
  spawnKith,
  startNodeProcess,
  type NodeProcess,
} from './cli.js'
import { launchChromium, watchedPage } from './browser.js'
import { codeOf, sasLine } from './pair-up.js'
import { tempDir } from './tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

/**
 * A laptop serving the web app and a devbox hosting the fake agent `claude` on a real hub, and a
 * Chromium page paired as the person's device "phone" (as a person pairs it: the code, the same
 * six digits on both sides), showing `#ops`.
 */
export async function pairedBrowser(
  opts: {
    encrypt?: boolean
    agentArgs?: string[]
    devboxArgs?: string[]
    /** `kith agent add` flags (before its `--`): --allow, --quorum… */
    agentFlags?: string[]
  } = {},
): Promise<{
  laptop: string
  devbox: string
  nl: NodeProcess
  nd: NodeProcess
  web: string
  browser: Browser
  page: Page
  problems: string[]
  stop(): Promise<void>
}> {
  const dir = tempDir()
  const { hub, laptop, devbox } = await laptopAndDevbox(dir)
  const added = await setupKith(
    [
      'agent',
      'add',
      'claude',
      ...(opts.agentFlags ?? []),
      '--',
      process.execPath,
      fakeAgent,
      ...(opts.agentArgs ?? []),
    ],
    { home: devbox },
  )
  expect(added.code, added.stderr).toBe(0)
  if (opts.encrypt === true)
    expect((await runKith(['fleet', 'encrypt', 'on'], { home: laptop })).code).toBe(0)
  const nd = await startNodeProcess(devbox, [
    '--no-web',
    '--permission-timeout',
    '120',
    ...(opts.devboxArgs ?? []),
  ])
  const nl = await startNodeProcess(laptop, ['--web-port', '0'])
  await nd.waitFor(/linked to/)
  await nl.waitFor(/linked to/)
  const { web } = JSON.parse(await nl.waitFor(/"event":"ready"/)) as { web: string }
  if (opts.encrypt === true)
    await expect
      .poll(async () => (await runKith(['fleet', 'encrypt', '--json'], { home: devbox })).stdout, {
        timeout: 20_000,
      })
      .toMatch(/"encrypt": true/)
  const browser = await launchChromium()
  const { page, problems } = await pairPage(browser, web, laptop, 'phone')
  return {
    laptop,
    devbox,
    nl,
    nd,
    web,
    browser,
    page,
    problems,
    async stop() {
      await browser.close()
      await nl.stop()
      await nd.stop()
      await hub.stop()
    },
  }
}

/**
 * A fresh browser profile paired as the person's device NAME (as a person pairs it: the code,
 * the same six digits on both sides, from the laptop's `kith pair`), showing `#ops`.
 */
export async function pairPage(
  browser: Browser,
  web: string,
  laptop: string,
  name: string,
  /** false: stay where pairing leaves the app (the channel it opens by itself). */
  opts: { openOps?: boolean } = {},
): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  const { page, problems } = await watchedPage(context)
  await page.goto(web)
  const pair = spawnKith(['pair', '--name', name], laptop)
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
  if (opts.openOps !== false) await page.goto(`${web}/#/c/ops`)
  await page.getByText(/live on 1 hub/).waitFor({ timeout: 30_000 })
  return { page, problems }
}

/** Types into the composer and sends with Enter, as a person would. */
export async function say(page: Page, text: string): Promise<void> {
  const box = page.getByRole('textbox', { name: /^Message #/ }).first()
  await box.click()
  await box.pressSequentially(text)
  await box.press('Enter')
}
