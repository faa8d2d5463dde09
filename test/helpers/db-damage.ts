import { closeSync, openSync, writeSync } from 'node:fs'
import Database from 'better-sqlite3'
import { expect } from 'vitest'

/** Overwrites `length` bytes of `path` at `offset`, as a bad sector or a torn write would. */
export function damage(path: string, offset: number, length: number): void {
  const fd = openSync(path, 'r+')
  writeSync(fd, Buffer.alloc(length, 0xa5), 0, length, offset)
  closeSync(fd)
}

/**
 * The first page of a leaf of the events table (their JSON), away from its ends: a page a hub's
 * start does not read, and a new event (appended to the last leaf) does not rewrite.
 */
export function eventsLeafPage(path: string): number {
  const db = new Database(path, { readonly: true })
  const pages = db
    .prepare<[], { pageno: number }>(
      "SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' ORDER BY pageno",
    )
    .all()
  db.close()
  expect(pages.length).toBeGreaterThan(4)
  return pages[Math.floor(pages.length / 2)]!.pageno
}

/** Damages page `pageno` (1-based, 4 KiB pages) of `path`. */
export function damagePage(path: string, pageno: number): void {
  damage(path, (pageno - 1) * 4096, 4096)
}
