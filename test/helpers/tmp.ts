import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { onCleanup } from './cleanup.js'

/** A fresh temp dir removed when the current test (or file fixture) finishes. */
export function tempDir(prefix = 'kith-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  onCleanup(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}
