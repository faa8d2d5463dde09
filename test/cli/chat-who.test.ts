import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { whoLines } from '../../src/cli/commands/chat-who.js'
import type { Person } from '../../src/grants/members.js'
import { runKith, spawnKith, startNodeProcess } from '../helpers/cli.js'
import { tempDir } from '../helpers/tmp.js'

const key = (c: string) => c.repeat(64)
const member = { status: 'active', admittedBy: undefined, deleg: false } as const

describe('/who in chat', () => {
  it('lists each person with their devices, presence and agents', () => {
    const alice: Person = {
      ...member,
      pubkey: key('a'),
      name: '',
      role: 'founder',
      admin: true,
      agents: [],
      devices: [
        {
          ...member,
          pubkey: key('1'),
          name: 'laptop',
          role: 'device',
          agents: [{ ...member, pubkey: key('9'), name: 'helper', role: 'agent' }],
        },
        { ...member, pubkey: key('2'), name: 'old', role: 'device', status: 'revoked', agents: [] },
      ],
    }
    const bob: Person = { ...alice, pubkey: key('b'), name: 'bob', role: 'owner', devices: [] }
    const lines = whoLines(
      'plans',
      true,
      [alice, bob],
      [
        {
          name: 'laptop',
          pubkey: key('1'),
          person: null,
          self: false,
          presence: 'offline',
          lastSeenSeconds: 300,
          agents: [{ name: 'helper', pubkey: key('9'), state: 'idle' }],
        },
      ],
      key('b'),
    )
    expect(lines).toEqual([
      '#plans: private, 2 people',
      '  founder',
      '    laptop: offline (heard 5 min ago); agents @helper idle',
      '  bob (you)',
    ])
  })

  it('answers /who through the running node', { timeout: 60_000 }, async () => {
    const home = join(tempDir(), 'h')
    expect((await runKith(['init', '--name', 'box'], { home })).code).toBe(0)
    await startNodeProcess(home, ['--port', '0', '--web-port', '0'])
    const chat = spawnKith(['chat', '#ops'], home)
    await chat.waitFor(/── #ops ──/)
    chat.write('/who\n')
    await chat.waitFor(
      /#ops: open to the whole fleet\n {2}founder \(you\)\n {4}box: online \(this device\)/,
    )
    chat.write('/quit\n')
    expect(await chat.exit).toBe(0)
  })
})
