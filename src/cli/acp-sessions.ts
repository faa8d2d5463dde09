import { readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { SessionBook } from '../acp/edge-agent.js'
import { KithError } from '../errors.js'

/** Editors' ACP session ids and the threads they became, kept across restarts (0600). */
export function acpSessionBook(home: string): SessionBook {
  const path = join(home, 'acp-sessions.json')
  const read = (): Record<string, string> => {
    try {
      return JSON.parse(readFileSync(path, 'utf8')) as Record<string, string>
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {}
      throw new KithError('config', `${path} is not readable JSON: ${String(err)}`)
    }
  }
  return {
    get: (id) => read()[id],
    set: (id, root) => {
      const all = { ...read(), [id]: root }
      writeFileSync(`${path}.tmp`, `${JSON.stringify(all)}\n`, { mode: 0o600 })
      renameSync(`${path}.tmp`, path)
    },
  }
}
