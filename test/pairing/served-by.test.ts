import { describe, expect, it } from 'vitest'
import {
  formatServedBy,
  parseServedBy,
  servedByVerdict,
  type ServedBy,
} from '../../src/pairing/protocol/served-by.js'

const alice = 'a1'.repeat(32)
const carol = 'c3'.repeat(32)

describe('kith-served-by: whose machine served the app', () => {
  it('reads back what it writes, names with any characters included', () => {
    for (const s of [
      { role: 'node', owner: alice, name: 'laptop' },
      { role: 'hub', name: 'team hub; #1 = ok' },
      { role: 'hub' },
    ] satisfies ServedBy[]) {
      expect(parseServedBy(formatServedBy(s))).toEqual(s)
    }
  })

  it('takes nothing from a malformed or foreign header', () => {
    for (const bad of [
      null,
      undefined,
      '',
      'role=agent',
      `role=node; owner=${alice.toUpperCase()}`,
      'role=node; owner=abc',
      'owner; role=node',
    ]) {
      expect(parseServedBy(bad)).toBeUndefined()
    }
    // A malformed name escape drops the name, not the rest.
    expect(parseServedBy(`role=node; owner=${alice}; name=%E0%A4%A`)).toEqual({
      role: 'node',
      owner: alice,
    })
  })

  it('pairs only into the fleet of the person whose machine served the page', () => {
    expect(servedByVerdict({ role: 'node', owner: alice, name: 'laptop' }, alice, 'alice')).toEqual(
      {
        ok: true,
        says: 'This page was served by the node laptop, a machine of alice.',
      },
    )
    expect(servedByVerdict({ role: 'hub', owner: alice }, alice, 'alice').ok).toBe(true)
    const cases: [ServedBy | undefined, string][] = [
      [undefined, 'unknown-server'],
      [{ role: 'hub', name: 'team' }, 'hub-of-unknown'],
      [{ role: 'hub', owner: carol, name: 'carol' }, 'another-person'],
      [{ role: 'node', owner: carol }, 'another-person'],
    ]
    for (const [served, why] of cases) {
      const v = servedByVerdict(served, alice, 'alice')
      expect(v).toMatchObject({ ok: false, why })
      expect(v.says).toMatch(/can use the key this browser would keep here/)
    }
  })
})
