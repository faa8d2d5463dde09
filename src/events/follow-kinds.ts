import { Kind } from './kinds.js'

/**
 * Which of Kith's kinds a device asks its hubs for, and how: the one list, read by the node
 * (`node/kith-node.ts`), the web app (`web/app/lib/fleet-client.ts`) and the service worker
 * (`web/sw/seal.ts`). Every kind in `Kind` is decided here: followed, fetched whole, or named in
 * `notFollowed` with why; test/events/follow-kinds.test.ts fails on a kind nobody decided.
 *
 * Followed kinds are subscribed live and caught up from the per-hub cursor (a device new to the
 * fleet, the last 7 days: link/catch-up.ts). Whole kinds (the authority kinds) are fetched before
 * the catch-up, all of them on a first connect, then what is new since the authority cursor: they
 * decide what the rest means (who is a member, who may read a channel, which key opens it), so
 * none may be missing however old; key envelopes are here so a catch-up, which pages newest first,
 * has the keys before the content they open (kith-e2e).
 */

/** Followed by every device: the conversation and the cards. */
export const followedKinds: readonly number[] = [
  Kind.ChatMessage,
  Kind.PermissionRequest,
  Kind.PermissionDecision,
  Kind.AgentControl,
]

/** Fetched whole by every device. */
export const authorityKinds: readonly number[] = [
  Kind.Profile,
  Kind.Grant,
  Kind.Revocation,
  Kind.ChannelDefinition,
  Kind.PushSender,
  Kind.FleetSetting,
  Kind.KeyEnvelope,
  // Agents' policies: every device (and `kith audit`, the web app's Audit view) judges cards by
  // the version in force; a quorum card's approvers are those of the policy it names.
  Kind.AgentPolicy,
]

/**
 * Followed by a node only. A node hosts agents and may send Web Push; a browser does neither:
 * - SessionControl: requests to close a session or change its mode, acted on by the hosting node
 *   (intake/handlers.ts); a browser only sends them.
 * - PushSubscription, SessionState: a node reads them as they come (the notifier seals to the
 *   subscriptions addressed to it, `kith session` lists states); the browser fetches them whole
 *   (`browserWholeKinds`).
 */
export const nodeOnlyFollowedKinds: readonly number[] = [
  Kind.PushSubscription,
  Kind.SessionControl,
  Kind.SessionState,
]

/**
 * Fetched whole by the browser (as authority kinds) where a node follows them. Both are
 * addressable (one per device, one per session), so "whole" is bounded by the fleet's devices and
 * sessions, not its history; the app needs every one from its first load, however old:
 * - PushSubscription: the app reads its own (whether and to which sender this browser subscribed,
 *   fleet.ts), which may be months old; caught up from a 7-day window, it would offer to subscribe
 *   again.
 * - SessionState: the Sessions view lists every agent's session, the newest state of each
 *   (kith-agents/1, Sessions), not only those that changed in the last 7 days.
 */
export const browserWholeKinds: readonly number[] = [Kind.PushSubscription, Kind.SessionState]

/**
 * Fetched by the service worker to seal a decision made on a notification: only what decides who
 * holds which channel key and whether the fleet seals (the channel's envelopes are asked for
 * separately, for the one channel). A subset of `authorityKinds`: the worker shows nothing, so
 * profiles, push senders and policies are not its to fetch.
 */
export const sealingAuthorityKinds: readonly number[] = [
  Kind.Grant,
  Kind.Revocation,
  Kind.ChannelDefinition,
  Kind.FleetSetting,
]

/** Kith's kinds no device follows or fetches whole, each with why. */
export const notFollowed: Readonly<Record<number, string>> = {
  [Kind.ClientAuth]: 'NIP-42 AUTH is sent with AUTH, never published or stored',
  [Kind.Pairing]: 'pairing frames travel on the pairing lane, before the device is a member',
  [Kind.Presence]: 'ephemeral: subscribed live only (limit 0), never caught up',
  [Kind.ObserverFrame]: 'ephemeral: subscribed live only, those addressed to this device',
}

/** Kinds a browser does not ask for, where a node does, each with why. */
export const notFollowedByBrowser: Readonly<Record<number, string>> = {
  [Kind.SessionControl]:
    "acted on by the agent's hosting node; a browser hosts no agent and only sends them",
}

/** What a device subscribes to and fetches, as `HubLink` and `BrowserLink` take it. */
export interface FollowKinds {
  /** Followed live and caught up from the cursor. */
  kinds: number[]
  /** Fetched whole the first time, then since the authority cursor; followed live too. */
  fullKinds: number[]
}

export type FollowingSurface = 'node' | 'browser'

/** The kinds `surface` deliberately does not ask for, each with why. */
export function notFollowedBy(surface: FollowingSurface): Readonly<Record<number, string>> {
  return surface === 'node' ? notFollowed : { ...notFollowed, ...notFollowedByBrowser }
}

export function followKinds(surface: FollowingSurface): FollowKinds {
  return surface === 'node'
    ? { kinds: [...followedKinds, ...nodeOnlyFollowedKinds], fullKinds: [...authorityKinds] }
    : { kinds: [...followedKinds], fullKinds: [...authorityKinds, ...browserWholeKinds] }
}
