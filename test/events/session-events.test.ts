import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { KithError } from '../../src/errors.js'
import { verifyEventSignature, type NostrEvent } from '../../src/events/event.js'
import { makeSessionControl, parseSessionControl } from '../../src/events/session-control.js'
import {
  makeSessionState,
  parseSessionState,
  type SessionStateSpec,
} from '../../src/events/session-state.js'

const vectors = JSON.parse(
  readFileSync(new URL('../vectors/session-events.json', import.meta.url), 'utf8'),
) as {
  fleet: string
  valid: Record<string, { event: NostrEvent; spec?: SessionStateSpec; id?: string }>
  invalid: { what: string; reason: string; event: NostrEvent }[]
}
const { fleet, valid } = vectors

describe('session events (test/vectors/session-events.json)', () => {
  it('a kind-34150 state: its short id, every field, and made again byte for byte', () => {
    const { event, spec, id } = valid.state!
    expect(verifyEventSignature(event)).toBe(true)
    const s = parseSessionState(event)
    expect(s.id).toBe(id)
    expect(s).toMatchObject({ ...spec, host: event.pubkey, fleet, reportedAt: event.created_at })
    const again = makeSessionState(spec!, fleet, event.created_at)
    expect(again.tags).toEqual(event.tags)
    expect(again.content).toBe(event.content)
  })

  it("a main thread's state has no root, and its d ends in main", () => {
    const { event } = valid.main!
    const s = parseSessionState(event)
    expect(s.thread).toBeUndefined()
    expect(s.address.endsWith(':ops:main')).toBe(true)
    expect(makeSessionState(s, fleet, event.created_at).tags).toEqual(event.tags)
  })

  it('kind-4150 close and set requests, made again byte for byte', () => {
    for (const name of ['close', 'set']) {
      const { event } = valid[name]!
      expect(verifyEventSignature(event)).toBe(true)
      const c = parseSessionControl(event)
      const again = makeSessionControl(c, event.created_at)
      expect(again.tags).toEqual(event.tags)
      expect(again.content).toBe(event.content)
    }
    expect(parseSessionControl(valid.close!.event).request).toEqual({ action: 'close', keep: true })
    expect(parseSessionControl(valid.set!.event)).toMatchObject({
      request: { action: 'set', mode: 'plan' },
    })
  })

  it.each(vectors.invalid.map((v) => [v.what, v.reason, v.event] as const))(
    'invalid: %s (%s)',
    (_what, reason, event) => {
      const parse =
        event.kind === 34150 || event.kind === 34151 ? parseSessionState : parseSessionControl
      let caught: unknown
      try {
        parse(event)
      } catch (err) {
        caught = err
      }
      expect(caught).toBeInstanceOf(KithError)
      expect((caught as KithError).reason).toBe(reason)
    },
  )
})
