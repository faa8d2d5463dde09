/// <reference lib="dom" />
/// <reference lib="webworker" />
// Callbacks given to page.evaluate and worker.evaluate run in the browser.
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import type { BrowserContext, CDPSession, Page, Worker } from 'playwright-core'
import { isSealed } from '../../src/events/e2e-seal.js'
import type { NostrEvent } from '../../src/events/event.js'
import { Kind } from '../../src/events/kinds.js'
import { parsePushPayload } from '../../src/events/push.js'
import { laptopAndDevbox, runKith, setupKith, spawnKith, startNodeProcess } from '../helpers/cli.js'
import { launchChromium, snap, watchedPage } from '../helpers/browser.js'
import { ask, history, threadedUnder } from '../helpers/node-chat.js'
import { codeOf, sasLine } from '../helpers/pair-up.js'
import { startEndpoint, testCertPath, testSubscription } from '../helpers/push-service.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))

interface Shown {
  title: string
  tag: string
  body: string
  actions: string[]
}

/**
 * The notifications the app's service worker shows now, asked through the page's registration:
 * Chromium may stop an idle worker and start a new one for the next push, so a handle on the
 * worker seen earlier is not a way to ask.
 */
function shown(page: Page, tag?: string): Promise<Shown[]> {
  return page.evaluate(async (t) => {
    const registration = await navigator.serviceWorker.ready
    const list = await registration.getNotifications(t === undefined ? undefined : { tag: t })
    return list.map((n) => ({
      title: n.title,
      tag: n.tag,
      body: n.body,
      actions: ((n as unknown as { actions: { action: string }[] }).actions ?? []).map(
        (a) => a.action,
      ),
    }))
  }, tag)
}

/** The running service worker, started by a message from the page if Chromium stopped it. */
async function runningWorker(context: BrowserContext, page: Page): Promise<Worker> {
  const live = context.serviceWorkers().at(-1)
  if (live !== undefined) return live
  const started = context.waitForEvent('serviceworker')
  await page.evaluate(async () => {
    ;(await navigator.serviceWorker.ready).active?.postMessage({ type: 'wake' })
  })
  return started
}

/**
 * Delivers a push to the app's service worker through the DevTools protocol until `arrived`
 * says the worker acted on it. Under a loaded machine Chromium has once taken the DevTools call
 * and shown nothing (a worker being stopped as the push came); a real push service delivers
 * again too, and the payload's tag makes a second delivery replace the first, not add to it.
 */
async function deliver(
  cdp: CDPSession,
  origin: string,
  registrationId: string,
  data: string,
  arrived: () => Promise<boolean>,
  diagnose: () => string,
): Promise<void> {
  for (let attempt = 1; attempt <= 4; attempt++) {
    if (attempt > 1) console.warn(`push delivered again (attempt ${attempt}); ${diagnose()}`)
    await cdp.send('ServiceWorker.deliverPushMessage', { origin, registrationId, data })
    const until = Date.now() + 5_000
    while (Date.now() < until) {
      if (await arrived()) return
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  throw new Error(`the service worker never acted on the push; ${diagnose()}`)
}

describe(
  'Web Push in the browser device (real node, push-service stand-in, Chromium service worker)',
  { timeout: 240_000 },
  () => {
    it('subscribes through a node of its person, shows a card with Reject only; an Allow action signs nothing and opens the card, whose Allow click (sealed, in a sealed fleet) runs the tool call; an answer elsewhere withdraws it', async () => {
      const dir = tempDir()
      const { laptop, devbox } = await laptopAndDevbox(dir)
      // Sealed, as a new fleet is (kith-e2e/1): the worker must seal its decision itself.
      expect((await runKith(['fleet', 'encrypt', 'on'], { home: laptop })).code).toBe(0)
      expect(
        (
          await setupKith(['agent', 'add', 'claude', '--', process.execPath, fakeAgent], {
            home: devbox,
          })
        ).code,
      ).toBe(0)
      const push = await startEndpoint({ tls: true })
      const sub = testSubscription(`${push.url}/push/chromium`)
      const nd = await startNodeProcess(devbox, ['--no-web', '--permission-timeout', '120'])
      const nl = await startNodeProcess(laptop, ['--web-port', '0'], {
        NODE_EXTRA_CA_CERTS: testCertPath,
      })
      await nd.waitFor(/linked to/)
      await nl.waitFor(/linked to/)
      await expect
        .poll(
          async () => (await runKith(['fleet', 'encrypt', '--json'], { home: devbox })).stdout,
          {
            timeout: 20_000,
          },
        )
        .toMatch(/"encrypt": true/)
      const web = (JSON.parse(await nl.waitFor(/"event":"ready"/)) as { web: string }).web

      const browser = await launchChromium()
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
      await context.grantPermissions(['notifications'], { origin: web })
      // The browser's push service (FCM, Mozilla's…) is out of reach here: the page's
      // PushManager hands out the test's subscription instead, whose keys the test holds.
      await context.addInitScript((s) => {
        const fake = {
          endpoint: s.endpoint,
          toJSON: () => s,
          unsubscribe: () => Promise.resolve(true),
        }
        let subscribed = false
        PushManager.prototype.subscribe = function () {
          subscribed = true
          return Promise.resolve(fake as unknown as PushSubscription)
        }
        PushManager.prototype.getSubscription = function () {
          return Promise.resolve(subscribed ? (fake as unknown as PushSubscription) : null)
        }
      }, sub.subscription)
      const { page, problems } = await watchedPage(context)
      const cdp = await context.newCDPSession(page)
      const registrations = new Map<string, string>()
      cdp.on('ServiceWorker.workerRegistrationUpdated', (e) => {
        for (const r of e.registrations) registrations.set(r.scopeURL, r.registrationId)
      })
      // What the worker did, for the message when a push is not acted on.
      const workerLog: string[] = []
      cdp.on('ServiceWorker.workerErrorReported', (e) =>
        workerLog.push(`error: ${e.errorMessage.errorMessage}`),
      )
      cdp.on('ServiceWorker.workerVersionUpdated', (e) => {
        for (const v of e.versions) workerLog.push(`version ${v.versionId}: ${v.runningStatus}`)
      })
      const diagnose = () => `the worker: ${workerLog.slice(-12).join('; ') || 'nothing reported'}`
      await cdp.send('ServiceWorker.enable')
      await page.goto(web)

      // Pair the browser (as in the web app's own test).
      const pair = spawnKith(['pair', '--name', 'phone'], laptop)
      const code = (await pair.waitFor(codeOf('kith join')))[1]!
      await page.getByLabel('Pairing code').fill(code)
      await page.getByRole('button', { name: 'Continue' }).click()
      await page.getByRole('button', { name: 'Join' }).click()
      await page.getByLabel('six digits').waitFor({ timeout: 20_000 })
      expect((await page.getByLabel('six digits').textContent())!.trim()).toBe(
        (await pair.waitFor(sasLine))[1],
      )
      await page.getByRole('button', { name: 'Same digits' }).click()
      pair.write('y\n')
      expect(await pair.exit, pair.output()).toBe(0)
      await page.getByText(/live on 1 hub/).waitFor({ timeout: 20_000 })

      // Notifications: the fleet view offers the person's nodes that send Web Push.
      await page.goto(`${web}/#/fleet`)
      const settings = page.getByRole('region', { name: 'Notifications on this browser' })
      await settings
        .getByRole('option', { name: /laptop/ })
        .waitFor({ state: 'attached', timeout: 20_000 })
      const laptopDevice = (
        JSON.parse((await runKith(['whoami', '--json'], { home: laptop })).stdout) as {
          deviceHex: string
        }
      ).deviceHex
      await settings.getByLabel('Sent by').selectOption(laptopDevice)
      await settings.getByLabel(/mention me/).uncheck()
      await settings.getByRole('button', { name: 'Turn on' }).click()
      await settings
        .getByText('on: laptop sends them')
        .waitFor({ timeout: 10_000 })
        .catch(async (err: unknown) => {
          throw new Error(`${String(err)}\nthe settings say: ${await settings.textContent()}`)
        })
      await nl.waitFor(/phone receives cards, errors, finished by Web Push/)
      await snap(page, 'notifications-settings')

      await expect.poll(() => registrations.get(`${web}/`)).toBeDefined()
      const registrationId = registrations.get(`${web}/`)!
      const pushToWorker = (data: string, arrived: () => Promise<boolean>) =>
        deliver(cdp, web, registrationId, data, arrived, diagnose)

      // A card: the laptop pushes it (RFC 8291, opened here with the subscription's keys); the
      // service worker gets exactly those bytes' plaintext and shows it with Reject only: a
      // notification action can be taken from a locked screen, so it may refuse, never permit.
      // Its options list allow_always first (as claude-agent-acp does): the payload's Allow (what
      // the page offers) is still the once one.
      const q = await ask(laptop, '@claude permission-execute rm -rf build')
      const card = (await threadedUnder(laptop, q, { kind: Kind.PermissionRequest }))[0]!.event
      const text = sub.open((await push.nth(0)).body)
      expect(parsePushPayload(text)).toMatchObject({
        tag: card.id,
        card: { allow: 'allow', sealed: true },
      })
      await pushToWorker(text, async () => (await shown(page, card.id)).length > 0)
      await expect
        .poll(() => shown(page, card.id), { timeout: 15_000 })
        .toEqual([
          {
            title: 'claude asks: rm -rf build',
            tag: card.id,
            body: '#ops · execute',
            actions: ['reject'],
          },
        ])

      // An "allow" action all the same (a notification an older worker showed, a platform that
      // passes one on from a locked screen): the worker signs nothing and opens the card in the
      // app instead, where only the person's click allows (issue 28, item 6).
      expect(page.url()).not.toContain(q)
      const worker = await runningWorker(context, page)
      await worker.evaluate(async (tag) => {
        const sw = self as unknown as ServiceWorkerGlobalScope
        const [n] = await sw.registration.getNotifications({ tag })
        // A click the test makes is untrusted, so its waitUntil throws; the handler has already
        // started by then (its promise is the argument), which is what is tested here.
        try {
          sw.dispatchEvent(
            new NotificationEvent('notificationclick', { notification: n!, action: 'allow' }),
          )
        } catch {
          // The untrusted event's waitUntil: see above.
        }
      }, card.id)
      await page.waitForURL((u) => u.hash.includes(q), { timeout: 15_000 })
      const cardView = page
        .getByRole('region', { name: 'Thread' })
        .locator(`article[data-request="${card.id}"]`)
      await cardView
        .getByRole('button', { name: 'Allow', exact: true })
        .waitFor({ timeout: 15_000 })
      // Nothing was decided: the worker's handler ended with opening the app.
      const decided = async () =>
        (await history(laptop)).filter(
          (i) =>
            i.event.kind === Kind.PermissionDecision &&
            i.event.tags.some((t) => t[0] === 'e' && t[1] === card.id),
        )
      expect(await decided()).toEqual([])
      // The person clicks Allow in the page: the page signs it with the device's key.
      await cardView.getByRole('button', { name: 'Allow', exact: true }).click()
      const answer = (await threadedUnder(laptop, q, { kind: 9 }))[0]!.event
      expect(answer.content).toBe('permission: selected allow')
      await threadedUnder(laptop, card.id, { kind: Kind.PermissionDecision })
      const decisions = await decided()
      expect(decisions.length).toBe(1)
      const decision = decisions[0]!
      expect(decision.from).toMatchObject({ name: 'phone', role: 'device' })
      // What the hub holds of it is ciphertext.
      const hubDb = new Database(join(dir, 'hub.db'), { readonly: true })
      const stored = hubDb.prepare('SELECT raw FROM events WHERE id = ?').get(decision.event.id) as
        { raw: string } | undefined
      hubDb.close()
      expect(stored).toBeDefined()
      expect(isSealed(JSON.parse(stored!.raw) as NostrEvent)).toBe(true)
      await expect.poll(() => shown(page, card.id), { timeout: 15_000 }).toEqual([])

      // A second card, answered on the laptop: the laptop withdraws it from the phone.
      const q2 = await ask(laptop, '@claude permission deploy')
      const card2 = (await threadedUnder(laptop, q2, { kind: Kind.PermissionRequest }))[0]!.event
      // (No withdrawal went to the phone for the first card: it answered it itself.)
      const notify2 = sub.open((await push.nth(1)).body)
      expect(parsePushPayload(notify2)).toMatchObject({ tag: card2.id })
      await pushToWorker(notify2, async () => (await shown(page, card2.id)).length > 0)
      await expect
        .poll(async () => (await shown(page, card2.id)).length, { timeout: 15_000 })
        .toBe(1)
      expect((await runKith(['permit', card2.id, 'reject'], { home: laptop })).code).toBe(0)
      const withdraw = sub.open((await push.nth(2)).body)
      expect(parsePushPayload(withdraw)).toEqual({ type: 'withdraw', tag: card2.id })
      await pushToWorker(withdraw, async () => (await shown(page, card2.id)).length === 0)
      await expect.poll(() => shown(page, card2.id), { timeout: 15_000 }).toEqual([])
      expect(problems).toEqual([])
    })
  },
)
