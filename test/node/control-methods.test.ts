import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { ControlClient } from '../../src/cli/control-client.js'
import { homeFiles } from '../../src/identity/home.js'
import { initIdentity } from '../../src/identity/keys.js'
import { tempDir } from '../helpers/tmp.js'
import { startInProcessNode } from '../helpers/in-process-node.js'

// The control socket's methods typed by one map (node/control-methods.ts): a caller of the CLI's
// client is held to each method's params at compile time (the @ts-expect-error lines), and the
// node reads every request's params at the edge, so a wrong shape sent anyway is answered with
// a coded error before any handler runs. Over the real socket of a running node.

describe('typed control methods', () => {
  it('answers a params shape its method does not take with usage / bad-params, and still serves good ones', async () => {
    const home = join(tempDir(), 'desk')
    initIdentity({ home, name: 'desk' })
    await startInProcessNode({ home, embedPort: 0, verifyWorkers: 0 })
    const client = (await ControlClient.connect(join(home, homeFiles.controlSocket)))!
    onTestFinished(() => client.close())
    const badParams = (field: string) => ({
      code: 'usage',
      reason: 'bad-params',
      message: expect.stringContaining(field) as unknown,
    })

    // @ts-expect-error text is a string
    await expect(client.request('send', { channel: 'ops', text: 5 })).rejects.toMatchObject(
      badParams('text must be a string'),
    )
    // @ts-expect-error agents is a list of keys
    await expect(client.request('hosts', { agents: 'claude' })).rejects.toMatchObject(
      badParams('agents must be a list of strings'),
    )
    // @ts-expect-error limit is a number
    await expect(client.request('history', { limit: '10' })).rejects.toMatchObject(
      badParams('limit must be a number'),
    )
    // @ts-expect-error status takes no params, and params are an object
    await expect(client.request('status', 'all')).rejects.toMatchObject(
      badParams('params must be an object'),
    )
    // A session request whose action is none of close, set, command or diff signs nothing.
    await expect(
      // @ts-expect-error not a session action
      client.request('session-request', { session: 'abc', request: { action: 'explode' } }),
    ).rejects.toMatchObject({ code: 'invalid', reason: 'bad-content' })

    // Typed results: what a good request returns is its method's result type.
    const status = await client.request('status')
    expect(status.name).toBe('desk')
    const sent = await client.request('send', { channel: 'ops', text: 'typed', waitMs: 0 })
    expect(sent.event.content).toBe('typed')
    const history = await client.request('history', { channel: 'ops' })
    expect(history.map((i) => i.event.content)).toEqual(['typed'])
  })
})
