// The browser fetches the authority kinds (grants, revocations, profiles, definitions,
// envelopes) whole only on its first connect; after a reload it asks only for what changed since
// its authority cursor (kept in IndexedDB), less the catch-up overlap. A fleet with a long
// history of grants must not cost every page load all of it.
import { describe, expect, it } from 'vitest'
import type { WebSocket as PageSocket } from 'playwright-core'
import { Kind } from '../../src/events/kinds.js'
import { catchUpOverlapSeconds } from '../../src/link/catch-up.js'
import { launchChromium } from '../helpers/browser.js'
import { laptopAndDevbox, startNodeProcess } from '../helpers/cli.js'
import { RawClient } from '../helpers/raw-client.js'
import { newKey, signTestGrant } from '../helpers/secrets.js'
import { tempDir } from '../helpers/tmp.js'
import { pairPage } from '../helpers/web-fleet.js'
import { publicKeyOf } from '../../src/events/event.js'

/** What the page asks one hub for and gets back, frame by frame. */
function watch(socket: PageSocket) {
  const sent: unknown[][] = []
  const received: unknown[][] = []
  socket.on('framesent', (f) => sent.push(JSON.parse(String(f.payload)) as unknown[]))
  socket.on('framereceived', (f) => received.push(JSON.parse(String(f.payload)) as unknown[]))
  return { sent, received }
}

describe('authority cursor in the web app (real hub, node, Chromium)', { timeout: 300_000 }, () => {
  it('after a reload, fetches only the authority events newer than its cursor', async () => {
    const dir = tempDir()
    const { hub, laptop, ownerSk } = await laptopAndDevbox(dir)
    const fleet = publicKeyOf(ownerSk)
    // A fleet with history: 30 agents granted two hours ago.
    const oldAt = Math.floor(Date.now() / 1000) - 2 * catchUpOverlapSeconds
    const owner = await RawClient.connect(hub.url)
    expect((await owner.auth(hub.url, ownerSk))[2]).toBe(true)
    const old = new Set<string>()
    for (let i = 0; i < 30; i++) {
      const g = signTestGrant({ subject: newKey().pk, role: 'agent', fleet }, ownerSk, oldAt)
      owner.send(['EVENT', g])
      expect(await owner.ok(g.id)).toEqual(['OK', g.id, true, ''])
      old.add(g.id)
    }
    owner.close()
    const nl = await startNodeProcess(laptop, ['--web-port', '0'])
    try {
      await nl.waitFor(/linked to/)
      const { web } = JSON.parse(await nl.waitFor(/"event":"ready"/)) as { web: string }
      const browser = await launchChromium()
      const { page, problems } = await pairPage(browser, web, laptop, 'phone')

      // The reload: the link connects again with the cursor it kept in IndexedDB.
      const sockets: ReturnType<typeof watch>[] = []
      const urls: string[] = []
      page.on('websocket', (s) => {
        if (!s.url().startsWith(hub.url)) return
        urls.push(s.url())
        sockets.push(watch(s))
      })
      await page.reload()
      await page.getByText(/live on 1 hub/).waitFor({ timeout: 30_000 })
      expect(sockets.length).toBeGreaterThan(0)
      // The browser is a member: it carries a connect ticket (kith-hub) past the connection rate.
      for (const u of urls) expect(u).toMatch(/[?&]auth=[A-Za-z0-9_-]+$/)
      const { sent, received } = sockets[sockets.length - 1]!
      const authority = sent.filter(
        (f) =>
          f[0] === 'REQ' &&
          f.slice(2).some((x) => (x as { kinds?: number[] }).kinds?.includes(Kind.Grant)),
      )
      expect(authority.length).toBeGreaterThan(0)
      // The authority fetch is from the cursor (less the overlap), not from the beginning (the
      // live subscription, limit 0, fetches nothing stored)...
      const fetches = authority
        .flatMap((req) => req.slice(2) as { kinds?: number[]; since?: number; limit?: number }[])
        .filter((f) => f.kinds?.includes(Kind.Grant) && f.limit !== 0)
      expect(fetches.length, JSON.stringify(authority)).toBeGreaterThan(0)
      for (const f of fetches) expect(f.since, JSON.stringify(f)).toBeGreaterThan(oldAt)
      // ...so the two-hour-old grants do not come again, while the ones this hour made do.
      const grants = received
        .filter((f) => f[0] === 'EVENT' && (f[2] as { kind: number }).kind === Kind.Grant)
        .map((f) => (f[2] as { id: string }).id)
      expect(grants.filter((id) => old.has(id))).toEqual([])
      expect(grants.length).toBeGreaterThan(0)
      expect(problems).toEqual([])
    } finally {
      await nl.stop()
    }
  })
})
