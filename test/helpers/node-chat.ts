import { join } from 'node:path'
import { expect } from 'vitest'
import { ControlClient } from '../../src/cli/control-client.js'
import type { ChatItem } from '../../src/node/chat-store.js'
import { runKith } from './cli.js'

/** The channel's history as the running node in `home` has it (empty when none runs). */
export async function history(home: string, channel = 'ops', limit = 1000): Promise<ChatItem[]> {
  const c = await ControlClient.connect(join(home, 'node.sock'))
  if (c === undefined) return []
  try {
    return await c.request('history', { channel, limit })
  } finally {
    c.close()
  }
}

/**
 * Posts through the running node in `home` over its control socket, as `kith send` does, without
 * a process per message: for tests that need many messages and are not about `kith send`.
 */
export async function post(home: string, channel: string, text: string): Promise<string> {
  const c = await ControlClient.connect(join(home, 'node.sock'))
  if (c === undefined) throw new Error(`no node runs in ${home}`)
  try {
    return (await c.request('send', { channel, text })).event.id
  } finally {
    c.close()
  }
}

/** `kith send` from `home` (`reply`: in that message's thread); returns the sent event's id. */
export async function ask(
  home: string,
  text: string,
  channel = 'ops',
  reply?: string,
): Promise<string> {
  const r = await runKith(
    ['send', `#${channel}`, text, '--json', ...(reply === undefined ? [] : ['--reply', reply])],
    { home },
  )
  expect(r.code, r.stderr).toBe(0)
  return (JSON.parse(r.stdout) as { id: string }).id
}

/**
 * The events of `kind` (a reply by default) threaded under `question`, as seen from `home`,
 * once at least `count` of them have arrived.
 */
export async function threadedUnder(
  home: string,
  question: string,
  opts: { kind?: number; count?: number; timeout?: number } = {},
): Promise<ChatItem[]> {
  const { kind = 9, count = 1, timeout = 40_000 } = opts
  let found: ChatItem[] = []
  await expect
    .poll(
      async () => {
        found = (await history(home)).filter(
          (i) =>
            i.event.kind === kind && i.event.tags.some((t) => t[0] === 'e' && t[1] === question),
        )
        return found.length >= count
      },
      { timeout },
    )
    .toBe(true)
  return found
}

/**
 * Sends `text` (in the thread of `reply`, when given) and returns the content of the first
 * reply threaded under it.
 */
export async function askForReply(home: string, text: string, reply?: string): Promise<string> {
  return (await threadedUnder(home, await ask(home, text, 'ops', reply)))[0]!.event.content
}
