import { describe, expect, it } from 'vitest'
import type { WebSocketRoute } from 'playwright-core'
import type { NostrEvent } from '../../src/events/event.js'
import { Kind } from '../../src/events/kinds.js'
import { runKith } from '../helpers/cli.js'
import { pairedBrowser, say } from '../helpers/web-fleet.js'

// kith-channels, "Definitions first" (issue 29, item 6): a private channel's definition goes to
// a hub, and is taken, before anything of the channel does; a hub without it would take the
// channel for open and pass the event to the whole fleet. One rule (src/grants/
// definitions-first.ts) for the node's outbox, the web app and the service worker: this is the
// web app's side, in Chromium, against a hub that does not take the definition.

const tag = (e: NostrEvent, name: string) => e.tags.find((t) => t[0] === name)?.[1]

describe(
  'the web app sends a private channel’s definition first (Chromium)',
  { timeout: 240_000 },
  () => {
    it('attacker: a hub that refuses #secret’s definition gets nothing of #secret from the browser', async () => {
      const f = await pairedBrowser()
      const made = await runKith(['channel', 'create', '#secret', '--private'], { home: f.laptop })
      expect(made.code, made.stderr).toBe(0)

      // Between the browser and its hub: every definition of #secret the browser publishes is
      // answered OK false, as a hub that does not take it would; what the browser publishes in
      // #secret is recorded: with the definition refused, any of it is a leak.
      const published: NostrEvent[] = []
      const refusedDefinitions: string[] = []
      let sawPublish: () => void = () => undefined
      const published1 = new Promise<void>((resolve) => (sawPublish = resolve))
      await f.page.context().routeWebSocket(/^wss?:\/\//, (ws: WebSocketRoute) => {
        const server = ws.connectToServer()
        ws.onMessage((frame) => {
          const msg = JSON.parse(String(frame)) as unknown[]
          const event = msg[0] === 'EVENT' ? (msg[1] as NostrEvent) : undefined
          if (event?.kind === Kind.ChannelDefinition && tag(event, 'd') === 'secret') {
            refusedDefinitions.push(event.id)
            ws.send(JSON.stringify(['OK', event.id, false, 'blocked: this hub does not take it']))
            return
          }
          if (event !== undefined && tag(event, 'h') === 'secret') {
            published.push(event)
            sawPublish()
          }
          server.send(frame)
        })
      })
      // A fresh load: the app's links to its hubs now go through the route.
      await f.page.goto(`${f.web}/#/c/secret`)
      await f.page.reload()
      await f.page.getByText(/live on 1 hub/).waitFor({ timeout: 30_000 })
      await say(f.page, 'for the secret channel only')

      // The app shows the message refused (it never went), or, on a build that sends it anyway,
      // the hub got it: either ends the wait.
      await Promise.race([
        f.page
          .getByText(/refused: not sent/)
          .first()
          .waitFor({ timeout: 60_000 }),
        published1,
      ])
      expect(refusedDefinitions.length, 'the browser offered the definition first').toBeGreaterThan(
        0,
      )
      expect(
        published.map((e) => e.kind),
        'events of #secret the browser published to a hub that had not taken its definition',
      ).toEqual([])
      await f.page
        .getByText(/refused: not sent: this hub refused the definition of #secret/)
        .first()
        .waitFor({ timeout: 5_000 })
      expect(f.problems).toEqual([])
      await f.stop()
    })
  },
)
