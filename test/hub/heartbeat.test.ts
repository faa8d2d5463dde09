import { describe, expect, it } from 'vitest'
import { Heartbeat } from '../../src/hub/heartbeat.js'

// The hub pings and re-checks its connections a share at a time: one period's sweep of 2,000
// connections is spread over its ticks, never one burst, and no connection is visited again
// before a period has passed (its pong had that long to come back).

describe('the heartbeat', () => {
  function setUp(size: number) {
    const conns = new Set(Array.from({ length: size }, (_, i) => i))
    let now = 0
    const visits: number[][] = []
    let current: number[] = []
    const beat = new Heartbeat(
      conns,
      30_000,
      (c) => current.push(c),
      1000,
      () => now,
    )
    const tick = (ms = 1000) => {
      now += ms
      current = []
      beat.tick()
      visits.push(current)
    }
    return { conns, beat, tick, visits }
  }

  it('visits 2,000 connections once a period, about 70 a tick', () => {
    const { tick, visits } = setUp(2000)
    // The first sweep starts a period in (tick 30) and ends within the next period.
    for (let i = 0; i < 59; i++) tick()
    const all = visits.flat()
    expect(new Set(all).size).toBe(2000)
    expect(all).toHaveLength(2000)
    // Before, one timer visited all 2,000 in one go.
    expect(Math.max(...visits.map((v) => v.length))).toBeLessThanOrEqual(67)
  })

  it('does not start the next sweep before a period has passed', () => {
    const { tick, visits } = setUp(3)
    for (let i = 0; i < 29; i++) tick()
    expect(visits.flat()).toEqual([])
    for (let i = 0; i < 4; i++) tick()
    expect(visits.flat()).toEqual([0, 1, 2])
    // A small set would be swept every few ticks; it waits for the period instead.
    for (let i = 0; i < 26; i++) tick()
    expect(visits.flat()).toEqual([0, 1, 2])
    for (let i = 0; i < 3; i++) tick()
    expect(visits.flat()).toEqual([0, 1, 2, 0, 1, 2])
  })

  it('skips a connection closed mid-sweep and visits one opened in it', () => {
    const { conns, tick, visits } = setUp(200)
    for (let i = 0; i < 30; i++) tick()
    conns.delete(150)
    conns.add(999)
    for (let i = 0; i < 28; i++) tick()
    const sweep = visits.flat()
    expect(sweep).not.toContain(150)
    expect(sweep).toContain(999)
    expect(new Set(sweep).size).toBe(sweep.length)
  })
})
