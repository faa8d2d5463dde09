import { describe, expect, it } from 'vitest'
import { generateSecretKey } from 'nostr-tools/pure'
import { makeChannelDefinition } from '../../src/events/channel-def.js'
import { publicKeyOf, signEvent, verifyEventSignature } from '../../src/events/event.js'
import { definitionsFirst } from '../../src/grants/definitions-first.js'
import { FleetState } from '../../src/grants/fleet-state.js'

// kith-channels/1, "Definitions first": one rule for node, web app and service worker.

const now = 1_750_000_000
const founderSk = generateSecretKey()
const fleet = publicKeyOf(founderSk)
const def = (channel: string, isPrivate: boolean) =>
  signEvent(
    makeChannelDefinition(
      { channel, fleet, creator: fleet, private: isPrivate, members: isPrivate ? [fleet] : [] },
      now - 100,
    ),
    founderSk,
  )
const msg = (channel: string) =>
  signEvent({ kind: 9, created_at: now, tags: [['h', channel]], content: 'x' }, founderSk)

describe('definitionsFirst', () => {
  const state = new FleetState({ founder: fleet, verifySignature: verifyEventSignature })
  const board = def('board', true)
  const lobby = def('lobby', false)
  for (const d of [board, lobby]) expect(state.admit(d, now).ok).toBe(true)
  const byId = new Map([board, lobby].map((e) => [e.id, e]))

  it('sends a private channel’s definition in effect ahead of its events to a hub that lacks it', () => {
    expect(
      definitionsFirst(
        state.channels,
        msg('board'),
        () => false,
        (id) => byId.get(id),
        now,
      ),
    ).toEqual({ first: [board] })
  })

  it('sends nothing for a hub that holds it, an open channel, or a definition itself', () => {
    const none = { first: [] }
    expect(
      definitionsFirst(
        state.channels,
        msg('board'),
        (id) => id === board.id,
        byId.get.bind(byId),
        now,
      ),
    ).toEqual(none)
    expect(
      definitionsFirst(state.channels, msg('lobby'), () => false, byId.get.bind(byId), now),
    ).toEqual(none)
    expect(definitionsFirst(state.channels, board, () => false, byId.get.bind(byId), now)).toEqual(
      none,
    )
  })

  it('says so when the definition in effect is not held to send', () => {
    const p = definitionsFirst(
      state.channels,
      msg('board'),
      () => false,
      () => undefined,
      now,
    )
    expect(p).toMatchObject({ refuse: expect.stringMatching(/#board/) as string })
  })
})
