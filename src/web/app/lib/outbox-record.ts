import type { NostrEvent } from '../../../browser-core.js'

/**
 * The web app's outbox record (IndexedDB, store `outbox`, keyed by event id) and what follows
 * from it, as the node's outbox (node.db's per-hub deliveries): an event is kept until every hub
 * this page links to has answered it for good. What an answer means is link/outbox-answer.ts's;
 * this file only keeps the answers and reads them.
 */

/** A hub's answer that ends an event for that hub (link/outbox-answer.ts). */
export interface HubAnswer {
  outcome: 'delivered' | 'refused'
  /** The hub's words. */
  message: string
}

/**
 * As stored. `hubs` is this version's shape. A record from an app before per-hub answers has
 * `state` (and, refused, `message`) instead: it is read as it stands (`readRecord`) and written in
 * this shape when a hub next answers.
 */
export interface StoredOutgoing {
  event: NostrEvent
  /** Per hub URL: its answer for good. A hub not named here is still owed the event. */
  hubs?: Record<string, HubAnswer>
  /** Older versions only: 'queued' (no hub took it) or 'refused' (some hub, unnamed, refused it). */
  state?: 'queued' | 'refused'
  message?: string
}

/**
 * An event of this device in the outbox, and what the person sees of it: `queued` (no hub took
 * it yet), `sent` (a hub took it: it is in the fleet, even while another hub is still owed it),
 * `refused` (no hub took it and one refused it for good: shown with the hub's words).
 */
export interface Outgoing {
  event: NostrEvent
  answers: Readonly<Record<string, HubAnswer>>
  /**
   * An older version's refusal (no hub named): the event is sent to no hub again (that app did
   * not retry a refusal) and stays shown refused until dismissed.
   */
  legacyRefusal?: string
  state: 'queued' | 'sent' | 'refused'
  /** Refused: the hubs' words. */
  message?: string
}

/** The person's view of an event with these answers. */
export function outgoing(
  event: NostrEvent,
  answers: Readonly<Record<string, HubAnswer>>,
  legacyRefusal?: string,
): Outgoing {
  const said = Object.values(answers)
  const legacy = legacyRefusal === undefined ? {} : { legacyRefusal }
  if (said.some((a) => a.outcome === 'delivered'))
    return { event, answers, ...legacy, state: 'sent' }
  const refusals = [
    ...new Set([
      ...(legacyRefusal === undefined ? [] : [legacyRefusal]),
      ...said.filter((a) => a.outcome === 'refused').map((a) => a.message),
    ]),
  ]
  if (refusals.length === 0) return { event, answers, ...legacy, state: 'queued' }
  return { event, answers, ...legacy, state: 'refused', message: refusals.join('; ') }
}

/** A stored record of either shape, as this version reads it. */
export function readRecord(stored: StoredOutgoing): Outgoing {
  // An older version's queued record (no `hubs`): no hub answered it for good yet, so every hub
  // is owed it (one that took it already answers `duplicate:`, which counts as delivered). Its
  // refused record stays refused, as that version kept it.
  const refusal = stored.state === 'refused' ? (stored.message ?? 'refused') : undefined
  return outgoing(stored.event, stored.hubs ?? {}, refusal)
}

/** The record to store for `o` (this version's shape). */
export function storedOf(o: Outgoing): StoredOutgoing {
  const legacy =
    o.legacyRefusal === undefined ? {} : { state: 'refused' as const, message: o.legacyRefusal }
  return { event: o.event, hubs: { ...o.answers }, ...legacy }
}

/** Whether `hub` is still owed `o`: it has not answered for good, and no older refusal stands. */
export function owes(o: Outgoing, hub: string): boolean {
  return o.legacyRefusal === undefined && o.answers[hub] === undefined
}

/**
 * Whether `o` leaves the outbox: every hub in `hubs` (those this page links to now; a hub taken
 * off the device's list, or one this page may not reach, is owed nothing) answered for good, and
 * one of them took it. Refused by all of them, it stays, shown, until the person dismisses it.
 */
export function done(o: Outgoing, hubs: readonly string[]): boolean {
  return o.state === 'sent' && hubs.every((h) => o.answers[h] !== undefined)
}
