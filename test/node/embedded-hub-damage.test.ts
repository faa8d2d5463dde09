import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { generateSecretKey } from 'nostr-tools/pure'
import { describe, expect, it } from 'vitest'
import { signEvent } from '../../src/events/event.js'
import { EventStore } from '../../src/store/event-store.js'
import { hubMigrations } from '../../src/store/hub-schema.js'
import { runKith, setupKith } from '../helpers/cli.js'
import { damagePage, eventsLeafPage } from '../helpers/db-damage.js'
import { tempDir } from '../helpers/tmp.js'

/**
 * A closed hub.db at `path` (no -wal: a clean stop) holding 300 kind-1 notes, a kind no node
 * follows, so neither the hub's start nor the node's catch-up reads their pages.
 */
function filledHubDb(path: string): void {
  const sk = generateSecretKey()
  const store = new EventStore(path, { migrations: hubMigrations })
  store.insertBatch(
    Array.from({ length: 300 }, (_, i) =>
      signEvent(
        { kind: 1, created_at: 1_700_000_000 + i, tags: [], content: `n${i} ${'x'.repeat(200)}` },
        sk,
      ),
    ),
  )
  store.close()
}

describe('kith up with an embedded hub (issue 34)', () => {
  it('stops with the damage, exit 1, when the background check finds hub.db damaged after a clean stop', async () => {
    const home = join(tempDir(), 'laptop')
    mkdirSync(home, { recursive: true })
    expect((await setupKith(['init', '--name', 'laptop'], { home })).code).toBe(0)
    const db = join(home, 'hub.db')
    filledHubDb(db)
    damagePage(db, eventsLeafPage(db))
    // Before the fix the hub stopped itself and the node ran on without it, until killed.
    const r = await runKith(['up', '--port', '0', '--no-web', '--no-acp'], { home })
    expect(r.stdout).toMatch(
      /kith up: hub: integrity: .* was closed cleanly: checking it .* background/,
    )
    expect(r.stdout).toMatch(/kith up: .* up; hubs: ws:\/\/127\.0\.0\.1:\d+/)
    expect(r.stdout).toMatch(/kith up: the embedded hub's database is damaged: stopping the node/)
    expect(r.code).toBe(1)
    expect(r.stderr.trim().split('\n').at(-1)).toMatch(
      new RegExp(
        `^kith: database ${db} is damaged \\(sqlite quick_check: .+\\)\\. .*move it aside`,
      ),
    )
  })
})
