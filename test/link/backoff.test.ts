import { describe, expect, it } from 'vitest'
import { backoffMs } from '../../src/link/backoff.js'
import { reconnectDelayMs } from '../../src/link/catch-up.js'

// One backoff formula (issue 32): each caller's numbers give what its own formula gave.

describe('backoffMs', () => {
  it('doubles from the first delay, stops at the cap, and jitters within its range', () => {
    const b = { firstMs: 500, maxMs: 20_000, jitter: [0.5, 1] as const }
    expect([0, 1, 2, 5, 6, 10].map((a) => backoffMs(a, b, () => 0.999999))).toEqual([
      500, 1000, 2000, 16_000, 20_000, 20_000,
    ])
    expect(backoffMs(3, b, () => 0)).toBe(2000)
    expect(backoffMs(3, { ...b, jitter: [1, 1] }, () => 0.3)).toBe(4000)
    expect(backoffMs(0, { firstMs: 1000, maxMs: 60_000, jitter: [0.75, 1.25] }, () => 0.5)).toBe(
      1000,
    )
  })

  it("a link's reconnect is the old formula: 0.5 s doubling to 20 s, down to half", () => {
    for (const attempt of [0, 1, 4, 9])
      for (const r of [0, 0.25, 0.9]) {
        const old = Math.round(Math.min(20_000, 500 * 2 ** attempt) * (0.5 + r / 2))
        expect(reconnectDelayMs(attempt, () => r)).toBe(old)
      }
  })
})
