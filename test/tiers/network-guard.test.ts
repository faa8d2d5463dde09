// The network tier's promise, held by test/tiers/guard.ts: sockets yes, processes no.
import { spawn } from 'node:child_process'
import { createServer, type AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'

describe('the network tier', () => {
  it('listens on 127.0.0.1 but refuses a process, naming the processes tier', async () => {
    const server = createServer()
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    expect((server.address() as AddressInfo).port).toBeGreaterThan(0)
    await new Promise<void>((resolve) => server.close(() => resolve()))
    expect(() => spawn(process.execPath, ['--version'])).toThrow(
      'the network test tier starts no processes; move this file to the processes tier',
    )
  })
})
