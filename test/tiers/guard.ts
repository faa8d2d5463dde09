// The setup file of the `unit` and `network` test tiers (vitest.config.ts): a test in a tier
// that promises no sockets or no processes fails the moment it opens one, with the tier it should
// move to, instead of quietly making the fast loop slow. Node's own modules are patched for the
// length of one test file and restored after it.
import * as childProcess from 'node:child_process'
import { createRequire, syncBuiltinESMExports } from 'node:module'
import * as net from 'node:net'
import { afterAll } from 'vitest'

const require = createRequire(import.meta.url)
const tier = process.env.KITH_TEST_TIER ?? ''

/** Where a test that broke its tier's promise belongs instead. */
function refuse(what: string, moveTo: string): never {
  throw new Error(
    `the ${tier} test tier ${what}; move this file to the ${moveTo} tier (vitest.config.ts)`,
  )
}

const restores: (() => void)[] = []

function patch<T extends object, K extends keyof T>(target: T, key: K, replacement: T[K]): void {
  const original = target[key]
  target[key] = replacement
  restores.push(() => {
    target[key] = original
  })
}

const cp = require('node:child_process') as typeof childProcess
const noProcess = () => refuse('starts no processes', 'processes')
// spawn, exec, execFile and fork all go through ChildProcess#spawn; the sync ones do not.
// (ChildProcess#spawn is internal, so untyped.)
patch(cp.ChildProcess.prototype as unknown as { spawn: () => never }, 'spawn', noProcess)
patch(cp, 'spawnSync', noProcess as unknown as typeof cp.spawnSync)
patch(cp, 'execSync', noProcess as unknown as typeof cp.execSync)
patch(cp, 'execFileSync', noProcess as unknown as typeof cp.execFileSync)

if (tier === 'unit') {
  const noSocket = () => refuse('opens no sockets', 'network')
  patch(net.Socket.prototype, 'connect', noSocket as unknown as net.Socket['connect'])
  patch(net.Server.prototype, 'listen', noSocket as unknown as net.Server['listen'])
}
// ESM imports of node:child_process see the patched functions only after this.
syncBuiltinESMExports()

afterAll(() => {
  for (const restore of restores.reverse()) restore()
  syncBuiltinESMExports()
})
