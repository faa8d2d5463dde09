import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { signEvent, type NostrEvent } from '../../src/events/event.js'
import { isEphemeralKind, Kind } from '../../src/events/kinds.js'
import { newBatch } from '../../src/node/intake/batch.js'
import type { IntakeContext, IntakeTargets } from '../../src/node/intake/context.js'
import { admit } from '../../src/node/intake/admit.js'
import { handOff } from '../../src/node/intake/hand-off.js'
import { handlerFor, kindHandlerRows } from '../../src/node/intake/handlers.js'
import { intakeStages } from '../../src/node/intake/stages.js'

// The node's intake table and its last stages, in process with a recording fake of the node's
// parts: which kind reaches which part, and what a kind with no handler does.

const sk = generateSecretKey()
const now = () => Math.floor(Date.now() / 1000)
const event = (kind: number, content = ''): NostrEvent =>
  signEvent({ kind, created_at: now(), tags: [['h', 'ops']], content }, sk)

/** Targets that record each call as `verb kind`. */
function recorder(): { targets: IntakeTargets; calls: string[] } {
  const calls: string[] = []
  const verbs: (keyof IntakeTargets)[] = [
    'show',
    'observePush',
    'dispatch',
    'applyDecision',
    'applyControl',
    'applySessionControl',
    'presence',
    'frame',
  ]
  const targets = Object.fromEntries(
    verbs.map((v) => [v, (e: NostrEvent) => calls.push(`${v} ${e.kind}`)]),
  ) as unknown as IntakeTargets
  return { targets, calls }
}

/** The parts of the node these stages touch; the rest is absent and would throw if reached. */
function fakeContext(
  targets: IntakeTargets,
  admitted: { event: NostrEvent; admission: Record<string, unknown> }[] = [],
): IntakeContext {
  return {
    targets,
    e2e: { open: (events: readonly NostrEvent[]) => [...events], reopen: () => [] },
    book: { state: { admitBatch: () => admitted } },
    log: () => undefined,
    now,
  } as unknown as IntakeContext
}

describe('intake: the kind → handler table', () => {
  it('maps every handled kind to one handler, live ones only for ephemeral kinds', () => {
    const kinds = kindHandlerRows.map(([kind]) => kind)
    expect(new Set(kinds).size).toBe(kinds.length)
    expect(kinds.sort((a, b) => a - b)).toEqual(
      [
        Kind.ChatMessage,
        Kind.PermissionRequest,
        Kind.PermissionDecision,
        Kind.AgentControl,
        Kind.SessionControl,
        Kind.Presence,
        Kind.ObserverFrame,
        Kind.PushSubscription,
      ].sort((a, b) => a - b),
    )
    for (const [kind, handler] of kindHandlerRows) {
      expect(handlerFor(kind)).toBe(handler)
      const verbs = [handler.see, handler.act, handler.live].filter((f) => f !== undefined)
      expect(verbs.length, `kind ${kind} does something`).toBeGreaterThan(0)
      if (isEphemeralKind(kind)) expect(handler).toEqual({ live: handler.live })
      else expect(handler.live).toBeUndefined()
    }
    // Kept only: authority, profiles, session reports, policies have no handler.
    for (const kind of [Kind.Grant, Kind.Profile, Kind.SessionState, Kind.AgentPolicy, 1])
      expect(handlerFor(kind)).toBeUndefined()
  })

  it('hands each stored kind to its part, history only to be shown, and an unknown kind to nobody', () => {
    const { targets, calls } = recorder()
    const events = [
      event(Kind.ChatMessage, 'hello'),
      event(Kind.ChatMessage, 'said while its author stood'),
      event(Kind.PermissionRequest),
      event(Kind.PermissionDecision),
      event(Kind.AgentControl),
      event(Kind.SessionControl),
      event(Kind.PushSubscription),
      event(Kind.SessionState),
      event(1, 'a kind Kith does not know'),
    ]
    const b = newBatch(events, undefined, Promise.resolve())
    b.admitted = events
    b.accepted = events
    b.outcomes = events.map(() => 'stored')
    b.past.add(events[1]!.id)
    expect(handOff(b, fakeContext(targets))).toBe(true)
    expect(calls).toEqual([
      'show 9',
      'dispatch 9',
      // History: shown, never acted on.
      'show 9',
      'show 4142',
      'show 4143',
      'applyDecision 4143',
      'applyControl 4144',
      'applySessionControl 4150',
      'observePush 34161',
    ])
  })

  it('admission hands ephemeral kinds to their live handlers and keeps neither; one with no handler is dropped', () => {
    const { targets, calls } = recorder()
    const presence = event(Kind.Presence)
    const frame = event(Kind.ObserverFrame)
    const stray = event(20001)
    const chat = event(Kind.ChatMessage)
    const ok = { ok: true, store: true, revoked: false, authority: false }
    const b = newBatch([presence, frame, stray, chat], undefined, Promise.resolve())
    b.fresh = [presence, frame, stray, chat]
    b.verdicts = ['ok', 'ok', 'ok', 'ok']
    const ctx = fakeContext(
      targets,
      b.fresh.map((e) => ({ event: e, admission: ok })),
    )
    expect(admit(b, ctx)).toBe(true)
    expect(calls).toEqual(['presence 24141', 'frame 24142'])
    expect(b.admitted).toEqual([chat])
  })

  it('runs its stages in the documented order', () => {
    expect(intakeStages.map((s) => s.name)).toEqual([
      'dedupe',
      'verify',
      'wait for order',
      'admit',
      'open',
      'keep',
      'republish',
      'enforce',
      'hand off',
    ])
  })
})
