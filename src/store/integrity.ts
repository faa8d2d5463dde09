import { statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import { KithError } from '../errors.js'
import { damaged, damagedCodes } from './db.js'

/**
 * Bytes in `path`'s -wal file: 0 when there is none. In WAL mode the last connection to close a
 * database checkpoints it and deletes the -wal (the hub's `close` does: its store is the only
 * connection), so a -wal with content before the file is opened means the last writer did not
 * stop cleanly (killed, crashed, power lost) or another process has it open.
 */
export function unfinishedWalBytes(path: string): number {
  try {
    return statSync(`${path}-wal`).size
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0
    throw new KithError('io', `cannot read ${path}-wal`, { cause: err })
  }
}

// Plain JavaScript run as a worker (eval): it needs no build step, so it runs the same from
// dist/ and under the tests. Its own read-only connection sees one snapshot of the file while
// the hub's connection goes on writing (WAL), and is closed before the worker exits, so the
// hub's own close stays the last one (the one that removes the -wal).
const checkSource = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.lib)
let db
try {
  db = new Database(workerData.path, { readonly: true, fileMustExist: true })
  const rows = db.pragma('quick_check(3)')
  parentPort.postMessage({ problems: rows.map((r) => r.quick_check).filter((r) => r !== 'ok') })
} catch (err) {
  parentPort.postMessage({ error: String(err && err.message), code: err && err.code })
} finally {
  if (db !== undefined) db.close()
}
`

interface CheckResult {
  problems?: string[]
  error?: string
  code?: unknown
}

/** A quick_check running on a worker thread; `done` settles once the worker has exited. */
export interface BackgroundCheck {
  /** The damage found (the same error a check before use throws), or undefined when whole. */
  done: Promise<KithError | undefined>
}

/**
 * Runs sqlite's quick_check of `path` on a worker thread with its own read-only connection. It
 * reads the whole file (~2.2 s for a 2 GB hub.db on this project's machine), which a hub after a
 * clean stop does while it serves instead of before. Rejects only when the check could not run.
 */
export function checkInBackground(path: string): BackgroundCheck {
  const lib = createRequire(import.meta.url).resolve('better-sqlite3')
  const worker = new Worker(checkSource, { eval: true, workerData: { lib, path } })
  const done = new Promise<KithError | undefined>((resolve, reject) => {
    let result: CheckResult | undefined
    worker.on('message', (msg: CheckResult) => (result = msg))
    worker.on('error', (err) => {
      result = { error: err.message }
    })
    worker.on('exit', () => {
      if (result?.problems !== undefined) {
        const { problems } = result
        resolve(
          problems.length === 0
            ? undefined
            : damaged(path, `sqlite quick_check: ${problems.join('; ')}`),
        )
        return
      }
      const error = result?.error ?? 'the worker exited without an answer'
      if (typeof result?.code === 'string' && damagedCodes.has(result.code)) {
        resolve(damaged(path, error))
        return
      }
      reject(new KithError('io', `cannot check database ${path}: ${error}`))
    })
  })
  return { done }
}
