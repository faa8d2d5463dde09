import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { WebSocketRoute } from 'playwright-core'
import type { NostrEvent } from '../../src/events/event.js'
import { Kind } from '../../src/events/kinds.js'
import {
  freePort,
  laptopAndDevbox,
  setupKith,
  startHubProcess,
  startNodeProcess,
} from '../helpers/cli.js'
import { launchChromium } from '../helpers/browser.js'
import { pairPage, say } from '../helpers/web-fleet.js'
import { tempDir } from '../helpers/tmp.js'

// The browser's outbox keeps an event until every hub it links to has answered it for good, as a
// node's does (issue 32): a hub that was down when the person sent gets the event once it is
// back, with no action by the person, a reload in between notwithstanding. Before, the app let
// the event go once the first hub took it, and the other hub never got it.

const text = 'for both hubs'

interface Answer {
  url: string
  id: string
  ok: boolean
}

describe('the web app’s outbox waits for every hub (Chromium)', { timeout: 300_000 }, () => {
  it('a hub down when the person sends gets the message once it is back, across a reload', async () => {
    const dir = tempDir()
    const { hub: h1, laptop } = await laptopAndDevbox(dir)
    const hubHome = join(dir, 'hubhome')
    const port2 = await freePort()
    const h2db = join(dir, 'h2.db')
    let h2 = await startHubProcess(['--db', h2db, '--port', String(port2)], hubHome)
    const added = await setupKith(['hub', 'add', h2.url], { home: laptop })
    expect(added.code, added.stderr).toBe(0)
    const nl = await startNodeProcess(laptop, ['--web-port', '0'])
    await nl.waitFor(new RegExp(`linked to ${h1.url}`))
    await nl.waitFor(new RegExp(`linked to ${h2.url}`))
    const { web } = JSON.parse(await nl.waitFor(/"event":"ready"/)) as { web: string }
    const browser = await launchChromium()
    const { page, problems } = await pairPage(browser, web, laptop, 'phone')
    // `kith pair` hands a new device only the hubs another machine can reach (no loopback address
    // but the one its code names), so the second hub, on 127.0.0.1 like the first, is added to the
    // page's device record as a pairing over real addresses would have listed it. It holds the
    // device's grant: pairing synced it to every hub of the laptop.
    await page.evaluate(addHub, h2.url)

    // Between the page and its hubs, only watching: each chat message the page publishes, and
    // each hub's OK to it, by hub.
    const chats: Answer[] = []
    const answers: Answer[] = []
    const hubOf = (url: string) => (url.includes(`:${port2}`) ? h2.url : h1.url)
    await page.context().routeWebSocket(/^wss?:\/\//, (ws: WebSocketRoute) => {
      const server = ws.connectToServer()
      const url = hubOf(ws.url())
      const sent = new Set<string>()
      ws.onMessage((frame) => {
        const msg = JSON.parse(String(frame)) as unknown[]
        const event = msg[0] === 'EVENT' ? (msg[1] as NostrEvent) : undefined
        if (event?.kind === Kind.ChatMessage) {
          sent.add(event.id)
          chats.push({ url, id: event.id, ok: true })
        }
        server.send(frame)
      })
      server.onMessage((frame) => {
        const msg = JSON.parse(String(frame)) as unknown[]
        if (msg[0] === 'OK' && sent.has(msg[1] as string))
          answers.push({ url, id: msg[1] as string, ok: msg[2] === true })
        ws.send(frame)
      })
    })
    // A fresh load: the links now go through the route.
    await page.reload()
    await page.getByText(/live on 2 hubs/).waitFor({ timeout: 60_000 })

    // The second hub goes down; the person sends.
    await h2.stop()
    await page.getByText(/live on 1 hub\b/).waitFor({ timeout: 30_000 })
    await say(page, text)
    await expect
      .poll(() => answers.filter((a) => a.url === h1.url && a.ok).length, { timeout: 30_000 })
      .toBe(1)
    const id = answers.find((a) => a.url === h1.url && a.ok)!.id
    // Taken by one hub: shown as sent (no queued mark), though the other hub is still owed it.
    const message = page.locator('article.message', { hasText: text })
    await message.locator('.queued').waitFor({ state: 'detached', timeout: 30_000 })
    expect(await message.locator('.error').count()).toBe(0)
    expect(
      answers.some((a) => a.url === h2.url),
      'the second hub was down',
    ).toBe(false)

    // A reload while the second hub is still owed the message: the outbox is in IndexedDB.
    await page.reload()
    await page.getByText(/live on 1 hub\b/).waitFor({ timeout: 60_000 })
    await page.locator('article.message', { hasText: text }).waitFor({ timeout: 30_000 })

    // The second hub comes back (same port, same database): the page's link to it reconnects by
    // itself and the outbox sends it the message it missed.
    h2 = await startHubProcess(['--db', h2db, '--port', String(port2)], hubHome)
    await page.getByText(/live on 2 hubs/).waitFor({ timeout: 90_000 })
    await expect
      .poll(() => answers.filter((a) => a.url === h2.url && a.id === id && a.ok).length, {
        timeout: 60_000,
      })
      .toBeGreaterThan(0)
    // The same event to both hubs, and never shown queued or refused after the first hub took it.
    expect(new Set(chats.map((c) => c.id))).toEqual(new Set([id]))
    const shown = page.locator('article.message', { hasText: text })
    expect(await shown.locator('.queued').count()).toBe(0)
    expect(await shown.locator('.error').count()).toBe(0)

    // Every hub has it now: it leaves the outbox (IndexedDB).
    await expect.poll(() => page.evaluate(outboxHas, id), { timeout: 30_000 }).toBe(false)
    expect(problems.filter((p) => !/WebSocket connection/.test(p))).toEqual([])
    await browser.close()
    await nl.stop()
    await h2.stop()
    await h1.stop()
  })
})

/** In the page: adds `url` to the device record's hubs (IndexedDB `kith`, store `device`). */
function addHub(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open('kith')
    req.onerror = () => reject(req.error ?? new Error('IndexedDB did not open'))
    req.onsuccess = () => {
      const tx = req.result.transaction('device', 'readwrite')
      const store = tx.objectStore('device')
      const get = store.get('self')
      get.onsuccess = () => {
        const record = get.result as { hubs: string[] }
        store.put({ ...record, hubs: [...record.hubs, url] }, 'self')
      }
      tx.oncomplete = () => {
        req.result.close()
        resolve()
      }
      tx.onerror = () => reject(tx.error ?? new Error('IndexedDB write failed'))
    }
  })
}

/** In the page: whether the app's outbox (IndexedDB `kith`, store `outbox`) holds `id`. */
function outboxHas(id: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open('kith')
    req.onerror = () => reject(req.error ?? new Error('IndexedDB did not open'))
    req.onsuccess = () => {
      const get = req.result.transaction('outbox').objectStore('outbox').get(id)
      get.onsuccess = () => {
        req.result.close()
        resolve(get.result !== undefined)
      }
      get.onerror = () => reject(get.error ?? new Error('IndexedDB read failed'))
    }
  })
}
