import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import {
  authorityMarkdown,
  authorityTableEnd,
  authorityTableStart,
} from '../../src/grants/authority.js'

describe('nips/kith-fleet.md', () => {
  it('shows the authority table exactly as the code has it (node scripts/authority-table.js)', () => {
    const text = readFileSync(new URL('../../nips/kith-fleet.md', import.meta.url), 'utf8')
    const from = text.indexOf(authorityTableStart)
    const to = text.indexOf(authorityTableEnd)
    expect(from).toBeGreaterThanOrEqual(0)
    expect(to).toBeGreaterThan(from)
    expect(text.slice(from, to + authorityTableEnd.length)).toBe(authorityMarkdown())
  })
})
