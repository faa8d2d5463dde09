import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { KithError } from '../../errors.js'
import { checkAgentName, listAgentRecords } from '../../identity/agents.js'
import { agentFile, homeFiles, resolveKithHome } from '../../identity/home.js'
import { parseCount } from '../args.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { runUntilSignal } from '../signals.js'

export const agentLogsCommand = declare({
  name: 'agent logs',
  summary: "the agent's log (its stderr): the last lines, or --follow",
  usage: ['kith agent logs NAME [--lines N] [--follow]'],
  arity: { min: 1, max: 1, error: 'kith agent logs takes one agent NAME' },
  options: {
    lines: {
      type: 'string',
      short: 'n',
      value: 'N',
      description: 'print the last N lines (default 50; 0 prints the whole file)',
    },
    follow: { type: 'boolean', short: 'f', description: 'keep printing what the agent appends' },
  },
  about: `Prints the end of the agent's log, KITH_HOME/agents/NAME.log: what the agent process wrote on
stderr, and stdout lines that were not ACP (banners, auth hints). --lines N prints the last N
lines (default 50; 0 prints the whole file). --follow keeps printing what the agent appends
until Ctrl-C. Exits 5 when this node hosts no agent NAME.`,
})

/** The log file of agent `name` on the node at `home`; throws `not-found` for an unknown agent. */
export function agentLogPath(home: string, name: string): string {
  if (!existsSync(join(home, homeFiles.config))) {
    throw new KithError('not-initialized', `no kith identity in ${home}; run: kith init`)
  }
  checkAgentName(name)
  const record = listAgentRecords(home).find((a) => a.name === name)
  if (record === undefined) {
    throw new KithError('not-found', `no agent named ${name} on this node; see kith agent list`)
  }
  return agentFile(home, name, 'log')
}

/** Bytes [from, to) of the file at `path`. */
function readRange(path: string, from: number, to: number): Buffer {
  const fd = openSync(path, 'r')
  try {
    const buf = Buffer.alloc(to - from)
    let got = 0
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, from + got)
      if (n === 0) break
      got += n
    }
    return buf.subarray(0, got)
  } finally {
    closeSync(fd)
  }
}

/** The last `lines` lines (all when 0) of the file, read backwards in blocks. */
export function tailLines(path: string, lines: number): string {
  const size = statSync(path).size
  if (lines === 0) return readRange(path, 0, size).toString('utf8')
  let start = size
  let text = ''
  // One more newline than lines wanted (the file's last byte is usually one).
  while (start > 0 && (text.match(/\n/g)?.length ?? 0) <= lines) {
    const from = Math.max(0, start - 64 * 1024)
    text = readRange(path, from, start).toString('latin1') + text
    start = from
  }
  const all = Buffer.from(text, 'latin1').toString('utf8')
  const parts = all.split('\n')
  const trailing = parts.at(-1) === '' ? parts.pop() : undefined
  return parts.slice(-lines).join('\n') + (trailing === undefined ? '' : '\n')
}

export async function runAgentLogs(argv: string[], out: Out): Promise<number> {
  const parsed = agentLogsCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  const name = positionals[0]!
  const path = agentLogPath(resolveKithHome(), name.replace(/^@/, ''))
  const lines = parseCount('--lines', values.lines, 50)
  let offset = 0
  if (existsSync(path)) {
    const text = tailLines(path, lines)
    if (text !== '') process.stdout.write(text)
    offset = statSync(path).size
  } else out.err(`no log yet for ${name}: kith up starts the agent on its first prompt`)
  if (!values.follow) return 0
  // Polled against our own offset (not fs.watch, nor watchFile whose first stat may already
  // include an append): it sees a file created later and one truncated under it.
  const poll = setInterval(() => {
    const size = existsSync(path) ? statSync(path).size : 0
    if (size < offset) offset = 0
    if (size === offset) return
    process.stdout.write(readRange(path, offset, size))
    offset = size
  }, 200)
  out.err(`following ${path}; Ctrl-C stops`)
  await runUntilSignal(out, 'kith agent logs', () => {
    clearInterval(poll)
    return Promise.resolve()
  })
  return 0
}
