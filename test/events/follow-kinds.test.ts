import { describe, expect, it } from 'vitest'
import {
  authorityKinds,
  browserWholeKinds,
  followedKinds,
  followKinds,
  nodeOnlyFollowedKinds,
  notFollowed,
  notFollowedBy,
  notFollowedByBrowser,
  sealingAuthorityKinds,
} from '../../src/events/follow-kinds.js'
import { Kind } from '../../src/events/kinds.js'

// The one list of what a device asks its hubs for (events/follow-kinds.ts). A kind added to the
// Kind table and decided nowhere fails here, as does a surface that lost or doubled a kind.

const sorted = (kinds: readonly number[]) => [...kinds].sort((a, b) => a - b)
const allKinds = Object.values(Kind)

describe('follow kinds', () => {
  it('pins what every device follows and fetches whole', () => {
    expect(sorted(followedKinds)).toEqual(
      sorted([
        Kind.ChatMessage,
        Kind.PermissionRequest,
        Kind.PermissionDecision,
        Kind.AgentControl,
      ]),
    )
    expect(sorted(authorityKinds)).toEqual(
      sorted([
        Kind.Profile,
        Kind.Grant,
        Kind.Revocation,
        Kind.ChannelDefinition,
        Kind.PushSender,
        Kind.FleetSetting,
        Kind.KeyEnvelope,
        Kind.AgentPolicy,
      ]),
    )
  })

  it('pins the named differences between a node, a browser and the service worker', () => {
    expect(sorted(nodeOnlyFollowedKinds)).toEqual(
      sorted([Kind.PushSubscription, Kind.SessionControl, Kind.SessionState]),
    )
    expect(sorted(browserWholeKinds)).toEqual(sorted([Kind.PushSubscription, Kind.SessionState]))
    const node = followKinds('node')
    const browser = followKinds('browser')
    expect(sorted(node.kinds)).toEqual(sorted([...followedKinds, ...nodeOnlyFollowedKinds]))
    expect(sorted(node.fullKinds)).toEqual(sorted(authorityKinds))
    expect(sorted(browser.kinds)).toEqual(sorted(followedKinds))
    expect(sorted(browser.fullKinds)).toEqual(sorted([...authorityKinds, ...browserWholeKinds]))
    // A browser hosts no agent: session controls are a node's to act on, not the app's to read.
    expect([...browser.kinds, ...browser.fullKinds]).not.toContain(Kind.SessionControl)
    // The worker fetches only what decides channel keys: a part of the authority, nothing else.
    expect(sorted(sealingAuthorityKinds)).toEqual(
      sorted([Kind.Grant, Kind.Revocation, Kind.ChannelDefinition, Kind.FleetSetting]),
    )
    for (const k of sealingAuthorityKinds) expect(authorityKinds).toContain(k)
  })

  it('decides every Kith kind exactly once on each surface, with a reason when not followed', () => {
    for (const surface of ['node', 'browser'] as const) {
      const { kinds, fullKinds } = followKinds(surface)
      const skipped = Object.keys(notFollowedBy(surface)).map(Number)
      const decided = [...kinds, ...fullKinds, ...skipped]
      expect(new Set(decided).size, `${surface}: a kind decided twice`).toBe(decided.length)
      expect(sorted(decided), `${surface}: a kind in Kind nobody decided`).toEqual(sorted(allKinds))
    }
    expect(Object.keys(notFollowedByBrowser).map(Number)).toEqual([Kind.SessionControl])
    // A node asks for everything but what no device asks for.
    expect(notFollowedBy('node')).toEqual(notFollowed)
    for (const [kind, why] of Object.entries(notFollowedBy('browser'))) {
      expect(allKinds, `notFollowed names ${kind}, not a Kith kind`).toContain(Number(kind))
      expect(why.length).toBeGreaterThan(10)
    }
  })
})
