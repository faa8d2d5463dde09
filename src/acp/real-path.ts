import { realpathSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'

/**
 * The real path of an absolute path as written, resolved component by component as the kernel
 * does: a symlink is followed before a later `..` applies to where it led. Where a component does
 * not exist (a file about to be written), the rest is taken as written. For secret-paths.ts.
 */
export function realPath(path: string): string {
  const parts = path.split('/').filter((p) => p !== '' && p !== '.')
  let current = '/'
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!
    if (part === '..') {
      current = dirname(current)
      continue
    }
    const next = join(current, part)
    try {
      current = realpathSync(next)
    } catch {
      // Missing (ENOENT, ENOTDIR), unreadable or a loop: nothing below can be a symlink we can
      // see, so the rest is lexical. The caller also checks the path as written.
      return resolve(next, ...parts.slice(i + 1))
    }
  }
  return current
}
