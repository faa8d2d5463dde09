import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { setupKith, spawnKith, startNodeProcess } from '../helpers/cli.js'
import { tempDir } from '../helpers/tmp.js'

describe('stopping kith up', () => {
  it('does not wait for an attached kith chat or kith watch: they are told and let go', async () => {
    const home = join(tempDir(), 'laptop')
    expect((await setupKith(['init', '--name', 'laptop'], { home })).code).toBe(0)
    const node = await startNodeProcess(home, ['--port', '0'])
    const chat = spawnKith(['chat', '#ops'], home)
    await chat.waitFor(/#ops/)
    const watch = spawnKith(['watch'], home)
    await watch.waitFor(/watching/i)
    // Before the fix the control socket waited for its clients, so this never returned.
    expect(await node.stop('SIGINT')).toBe(0)
    expect(await chat.exit).toBe(0)
    await chat.waitFor(/the node stopped/)
    expect(await watch.exit).not.toBeNull()
  })
})
