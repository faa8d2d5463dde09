// Writes the authority table (src/grants/authority.ts) into nips/kith-fleet.md between its
// markers. Run after `npm run build:node`: `node scripts/authority-table.js`. The unit test
// test/grants/authority-spec.test.ts fails while the spec and the code disagree.
import { readFileSync, writeFileSync } from 'node:fs'
import {
  authorityMarkdown,
  authorityTableEnd,
  authorityTableStart,
} from '../dist/grants/authority.js'

const path = new URL('../nips/kith-fleet.md', import.meta.url)
const text = readFileSync(path, 'utf8')
const from = text.indexOf(authorityTableStart)
const to = text.indexOf(authorityTableEnd)
if (from < 0 || to < from) {
  console.error(`nips/kith-fleet.md has no authority-table markers`)
  process.exit(1)
}
const next = text.slice(0, from) + authorityMarkdown() + text.slice(to + authorityTableEnd.length)
if (next === text) console.log('nips/kith-fleet.md: the authority table is up to date')
else {
  writeFileSync(path, next)
  console.log('nips/kith-fleet.md: authority table written')
}
