/// <reference lib="dom" />
// Callbacks given to page.evaluate run in the browser.
import { describe, expect, it, onTestFinished } from 'vitest'
import { startWebServer } from '../../src/web/serve.js'
import { clickIfStillThere, launchChromium, snap, watchedPage } from '../helpers/browser.js'

const root = new URL('../../dist/web/app/', import.meta.url).pathname

async function serve() {
  const web = await startWebServer({
    port: 0,
    root,
    connectSources: () => [],
    servedBy: () => ({ role: 'node' }),
  })
  onTestFinished(() => web.close())
  return web
}

describe('the app shell in Chromium', { timeout: 60_000 }, () => {
  it('loads offline from its service worker and says it is offline; back online, it says nothing', async () => {
    const web = await serve()
    const browser = await launchChromium()
    const context = await browser.newContext()
    const { page, problems } = await watchedPage(context)
    await page.goto(web.url)
    await page.getByRole('heading', { name: 'Pair this browser' }).waitFor()
    // The worker installs (precaching the shell) and takes the page over.
    await page.evaluate(async () => {
      await navigator.serviceWorker.ready
    })
    await expect
      .poll(() => page.evaluate(() => navigator.serviceWorker.controller !== null))
      .toBe(true)
    // Loaded from the server: not offline.
    expect(await page.getByRole('status').count()).toBe(0)
    const cached = await page.evaluate(async () => {
      const names = await caches.keys()
      const cache = await caches.open(names[0]!)
      return (await cache.keys()).map((r) => new URL(r.url).pathname).sort()
    })
    expect(cached).toEqual(
      expect.arrayContaining(['/', '/manifest.webmanifest', '/icons/icon-192.png']),
    )
    expect(cached.some((p) => /^\/assets\/index-[\w-]+\.js$/.test(p))).toBe(true)

    await context.setOffline(true)
    await page.reload()
    await page.getByRole('heading', { name: 'Pair this browser' }).waitFor()
    await page
      .getByRole('status')
      .getByText(/Offline: no network/)
      .waitFor()
    await snap(page, 'offline-shell')
    // Still offline, "Try again" loads the page again from the cache and says so again.
    const tryAgain = page.getByRole('button', { name: 'Try again' })
    await tryAgain.click()
    await page.getByRole('heading', { name: 'Pair this browser' }).waitFor()
    await page
      .getByRole('status')
      .getByText(/Offline: no network/)
      .waitFor()
    // The network is back. A browser that fires `online` takes the banner away by itself; where
    // none fires, the person presses "Try again". Either way the banner goes and the page stays.
    await context.setOffline(false)
    await expect
      .poll(async () => {
        if (await tryAgain.isVisible()) await clickIfStillThere(tryAgain)
        return page.getByRole('status').count()
      })
      .toBe(0)
    await page.getByRole('heading', { name: 'Pair this browser' }).waitFor()
    expect(problems).toEqual([])
  })

  it('says it is back once its server answers, even where the browser fires no online event', async () => {
    const web = await serve()
    const browser = await launchChromium()
    const context = await browser.newContext()
    // A browser that never tells the page the network is back (as Chromium 150 did not).
    await context.addInitScript(() => {
      addEventListener('online', (e) => e.stopImmediatePropagation(), { capture: true })
    })
    const { page, problems } = await watchedPage(context)
    await page.goto(web.url)
    await page.evaluate(async () => {
      await navigator.serviceWorker.ready
    })
    await expect
      .poll(() => page.evaluate(() => navigator.serviceWorker.controller !== null))
      .toBe(true)
    await context.setOffline(true)
    await page.reload()
    await page
      .getByRole('status')
      .getByText(/Offline: no network/)
      .waitFor()
    await context.setOffline(false)
    // Nobody presses anything: the page asks its own server and the banner goes.
    await expect.poll(() => page.getByRole('status').count(), { timeout: 30_000 }).toBe(0)
    await page.getByRole('heading', { name: 'Pair this browser' }).waitFor()
    expect(problems).toEqual([])
  })

  it('fits a 390-px phone screen: nothing wider than the screen, every control reachable', async () => {
    const web = await serve()
    const browser = await launchChromium()
    const context = await browser.newContext({
      viewport: { width: 390, height: 844 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
    })
    const { page, problems } = await watchedPage(context)
    await page.goto(web.url)
    await page.getByRole('heading', { name: 'Pair this browser' }).waitFor()
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await page.getByLabel('Pairing code').fill('not a code')
    await page.getByRole('button', { name: 'Continue' }).tap()
    await page
      .getByText('This is not a kith pairing code; check that it was copied whole.')
      .waitFor()
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await snap(page, 'phone-pairing')
    // The page says what it is to the phone: installable, with its icons.
    const manifest = await page.evaluate(async () => {
      const link = document.querySelector<HTMLLinkElement>('link[rel=manifest]')!
      return (await fetch(link.href)).json() as Promise<{ display: string; icons: unknown[] }>
    })
    expect(manifest).toMatchObject({ display: 'standalone' })
    expect(manifest.icons.length).toBeGreaterThanOrEqual(2)
    expect(problems).toEqual([])
  })
})
