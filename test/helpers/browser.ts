/// <reference lib="dom" />
// Callbacks given to page.evaluate run in the browser.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import {
  chromium,
  errors,
  type Browser,
  type BrowserContext,
  type Locator,
  type Page,
} from 'playwright-core'
import { onTestFinished } from 'vitest'

/** Debian's Chromium (.ci/run installs it with apt-get when it is missing). */
export const chromiumPath = process.env.KITH_CHROMIUM ?? '/usr/bin/chromium'

/**
 * Where a run saves screenshots of the main views: dist/screenshots (not checked in), or the
 * folder KITH_SCREENSHOTS names (`npm run screenshots` refreshes docs/screenshots, which the
 * README shows).
 */
export const screenshotDir =
  process.env.KITH_SCREENSHOTS ?? new URL('../../dist/screenshots/', import.meta.url).pathname

/**
 * A real headless Chromium with a fresh profile, closed after the test. The flags keep it off
 * the network it has no business with (updates, sync, field trials): in a closed network those
 * would only be refused connections.
 */
export async function launchChromium(): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-default-apps',
      '--disable-features=Translate,MediaRouter,OptimizationHints',
    ],
  })
  onTestFinished(async () => {
    await browser.close()
  })
  return browser
}

export interface WatchedPage {
  page: Page
  /** Console errors, page errors and CSP violations seen so far: a test fails on any. */
  problems: string[]
}

/**
 * A page whose console errors, uncaught errors and Content-Security-Policy violations are
 * collected (`problems`); tests assert it stays empty.
 */
export async function watchedPage(context: BrowserContext): Promise<WatchedPage> {
  const problems: string[] = []
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI}`)
    })
  })
  const page = await context.newPage()
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console error: ${m.text()}`)
  })
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`))
  return { page, problems }
}

/** Saves a screenshot of the page as docs/screenshots/NAME.png. */
export async function snap(page: Page, name: string): Promise<void> {
  mkdirSync(screenshotDir, { recursive: true })
  await page.screenshot({ path: join(screenshotDir, `${name}.png`) })
}

/**
 * Clicks a control that the page may take away by itself at any moment (a banner that hides
 * when the browser reports the network back, on some Chromium versions and not others): a click
 * that finds it gone is not a failure; any other error is.
 */
export async function clickIfStillThere(control: Locator): Promise<void> {
  try {
    await control.click({ timeout: 2_000 })
  } catch (err) {
    if (!(err instanceof errors.TimeoutError)) throw err
  }
}
