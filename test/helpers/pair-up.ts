import { expect } from 'vitest'
import { setupKith, spawnKith } from './cli.js'

export const sasLine = /do not type it anywhere:\s+(\d{3} \d{3})/
export const codeOf = (cmd: string) => new RegExp(`${cmd} (kith-pair1:[A-Za-z0-9_-]+)`)

/**
 * One pairing between two real processes, answered as two people would: the inviter runs
 * `inviteArgs` in `from`, the other side runs `joinArgs CODE` in `to`; both compare the digits.
 */
export async function pairUp(
  from: string,
  inviteArgs: string[],
  to: string,
  joinArgs: string[],
): Promise<{ inviter: string; joiner: string }> {
  const inviter = spawnKith(inviteArgs, from)
  const joinCmd = joinArgs.join(' ')
  const code = (await inviter.waitFor(codeOf(joinCmd)))[1]!
  const joiner = spawnKith([...joinArgs, code, '--yes'], to)
  const a = (await joiner.waitFor(sasLine))[1]
  const b = (await inviter.waitFor(sasLine))[1]
  expect(a).toBe(b)
  joiner.write('y\n')
  inviter.write('y\n')
  expect(await inviter.exit, inviter.output()).toBe(0)
  expect(await joiner.exit, joiner.output()).toBe(0)
  return { inviter: inviter.output(), joiner: joiner.output() }
}

/** `kith init --name NAME` in `home`. */
export async function init(home: string, name: string): Promise<void> {
  const r = await setupKith(['init', '--name', name], { home })
  expect(r.code, r.stderr).toBe(0)
}
