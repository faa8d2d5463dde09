import { describe, expect, it } from 'vitest'
import type { WebSocketRoute } from 'playwright-core'
import type { NostrEvent } from '../../src/events/event.js'
import { Kind } from '../../src/events/kinds.js'
import { pairedBrowser, say } from '../helpers/web-fleet.js'

// The browser's outbox reads a hub's answer as the node's does (link/outbox-answer.ts): a
// `rate-limited:` answer means "not now", so the message stays queued and goes again after a
// backoff; it is never shown refused. Before, the app showed it refused for good.

const text = 'sent again after not now'

describe(
  'the web app retries what a hub said "not now" to (Chromium)',
  { timeout: 240_000 },
  () => {
    it('a message answered rate-limited goes again and reaches the hub, never shown refused', async () => {
      const f = await pairedBrowser()
      // Between the browser and its hub: the first EVENT of the message is answered
      // `rate-limited:` as a busy hub would; the ones after go through to the real hub.
      let notNow = 0
      const forwarded: string[] = []
      let sawForward: () => void = () => undefined
      const forwarded1 = new Promise<void>((resolve) => (sawForward = resolve))
      await f.page.context().routeWebSocket(/^wss?:\/\//, (ws: WebSocketRoute) => {
        const server = ws.connectToServer()
        ws.onMessage((frame) => {
          const msg = JSON.parse(String(frame)) as unknown[]
          const event = msg[0] === 'EVENT' ? (msg[1] as NostrEvent) : undefined
          // The only chat message this page sends (sealed: its content is not the text).
          if (event?.kind === Kind.ChatMessage) {
            if (notNow === 0) {
              notNow++
              ws.send(JSON.stringify(['OK', event.id, false, 'rate-limited: person: slow down']))
              return
            }
            forwarded.push(event.id)
            sawForward()
          }
          server.send(frame)
        })
      })
      // A fresh load: the app's links to its hubs now go through the route.
      await f.page.reload()
      await f.page.getByText(/live on 1 hub/).waitFor({ timeout: 30_000 })
      await say(f.page, text)

      // Sent again, or, on a build that takes "not now" for a refusal, shown refused: either ends
      // the wait.
      await Promise.race([
        forwarded1,
        f.page
          .getByText(/refused: rate-limited/)
          .first()
          .waitFor({ timeout: 60_000 }),
      ])
      expect(notNow, 'the route said "not now" once').toBe(1)
      expect(forwarded.length, 'the message went to the hub again after "not now"').toBeGreaterThan(
        0,
      )
      // The hub took it: the app no longer shows it queued, and never showed it refused.
      await f.page
        .getByText('queued, not yet on a hub')
        .waitFor({ state: 'detached', timeout: 30_000 })
      expect(await f.page.getByText(/refused:/).count()).toBe(0)
      expect(f.problems).toEqual([])
      await f.stop()
    })
  },
)
