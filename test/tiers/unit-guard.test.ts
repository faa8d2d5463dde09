// The unit tier's promise, held by test/tiers/guard.ts: no sockets, no processes.
import { execFileSync, spawn } from 'node:child_process'
import { createConnection, createServer } from 'node:net'
import { describe, expect, it } from 'vitest'

describe('the unit tier', () => {
  it('refuses a listening socket and a connection, naming the network tier', () => {
    expect(() => createServer().listen(0, '127.0.0.1')).toThrow(
      'the unit test tier opens no sockets; move this file to the network tier',
    )
    expect(() => createConnection({ host: '127.0.0.1', port: 9 })).toThrow(/opens no sockets/)
  })

  it('refuses a process, naming the processes tier', () => {
    expect(() => spawn(process.execPath, ['--version'])).toThrow(
      'the unit test tier starts no processes; move this file to the processes tier',
    )
    expect(() => execFileSync(process.execPath, ['--version'])).toThrow(/starts no processes/)
  })
})
