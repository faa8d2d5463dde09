import { channelsOfEvent } from '../events/channel-def.js'
import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import type { ChannelBook } from './channels.js'

/** What must go to a hub before an event, or why the event may not go yet. */
export type DefinitionsFirst = { first: NostrEvent[] } | { refuse: string }

/**
 * What a hub must hold before `event` goes to it (kith-channels, "Definitions first"): for each
 * private channel the event is in, the definition in effect, unless `hubHolds` says that hub has
 * it (it acknowledged it, or returned it). A hub without it would take the channel for open and
 * pass the event to the whole fleet. One rule for the node's outbox, the web app's and its
 * service worker's sends.
 */
export function definitionsFirst(
  channels: ChannelBook,
  event: NostrEvent,
  hubHolds: (definitionId: string) => boolean,
  eventOf: (id: string) => NostrEvent | undefined,
  now: number,
): DefinitionsFirst {
  if (event.kind === Kind.ChannelDefinition) return { first: [] }
  const first: NostrEvent[] = []
  for (const channel of channelsOfEvent(event)) {
    const def = channels.definition(channel, now)
    if (def === undefined || !def.private || hubHolds(def.id)) continue
    const raw = eventOf(def.id)
    if (raw === undefined)
      return { refuse: `the definition of #${channel} in effect is not held here to send first` }
    first.push(raw)
  }
  return { first }
}
