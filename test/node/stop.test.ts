import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runKith, setupKith, spawnKith, startNodeProcess } from '../helpers/cli.js'
import { tempDir } from '../helpers/tmp.js'

describe('stopping kith up', () => {
  it('does not wait for an attached kith chat or kith watch; chat stays and reattaches when the node is back', async () => {
    const home = join(tempDir(), 'laptop')
    expect((await setupKith(['init', '--name', 'laptop'], { home })).code).toBe(0)
    const node = await startNodeProcess(home, ['--port', '0'])
    const chat = spawnKith(['chat', '#ops'], home)
    await chat.waitFor(/#ops/)
    chat.write('before the restart\n')
    await chat.waitFor(/laptop.*: before the restart/)
    const watch = spawnKith(['watch'], home)
    await watch.waitFor(/watching/i)
    // Before the fix the control socket waited for its clients, so this never returned.
    expect(await node.stop('SIGINT')).toBe(0)
    expect(await watch.exit).not.toBeNull()
    // A restart (a service manager, a person in tmux): chat waits for the node, not the shell.
    await chat.waitFor(/the node stopped; waiting for it to come back/)
    expect(chat.child.exitCode).toBeNull()
    // Sent meanwhile from elsewhere: queued in node.db, shown once chat is back.
    expect((await runKith(['send', '#ops', 'while it was away'], { home })).code).toBe(0)
    await startNodeProcess(home, ['--port', '0'])
    await chat.waitFor(/── reattached to the node \(#ops\) ──/, 30_000)
    await chat.waitFor(/reattached[\s\S]*while it was away/)
    // Only what came while it was away: the earlier message is not shown twice.
    expect(chat.output().match(/: before the restart/g)).toHaveLength(1)
    chat.write('after the restart\n')
    await chat.waitFor(/laptop.*: after the restart/)
    chat.write('/quit\n')
    expect(await chat.exit).toBe(0)
  })
})
