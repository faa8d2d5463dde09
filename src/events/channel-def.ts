import { KithError } from '../errors.js'
import { isHex64, type EventTemplate, type NostrEvent } from './event.js'
import { Kind } from './kinds.js'

/** Channel names as in kith-chat: 1–64 of a-z 0-9 _ . -, starting with a letter or digit. */
const channelPattern = /^[a-z0-9][a-z0-9_.-]{0,63}$/

/**
 * A parsed kind-34140 channel definition (kith-channels/1). The newest accepted definition of a
 * channel is in effect; `members` are person (owner) keys, each covering that person's devices
 * and agents.
 */
export interface ChannelDefinition {
  id: string
  /** Who signed it: the founder, an admin owner, or the channel's creator. */
  author: string
  createdAt: number
  /** The `d` tag: the channel's name (an `h` value). */
  channel: string
  fleet: string
  /** The owner who created the channel; every later definition repeats it. */
  creator: string
  private: boolean
  /** `p` tags, in order, without repeats. Only meaningful when `private`. */
  members: string[]
  /** `content`: a human description (may be empty). */
  about: string
}

export interface ChannelDefinitionSpec {
  channel: string
  fleet: string
  creator: string
  private: boolean
  members?: readonly string[]
  about?: string
}

function malformed(reason: string): KithError {
  return new KithError('invalid', `malformed: ${reason}`)
}

export function isChannelName(value: unknown): value is string {
  return typeof value === 'string' && channelPattern.test(value)
}

/** The unsigned definition; tag order is fixed so ids are reproducible. */
export function makeChannelDefinition(
  spec: ChannelDefinitionSpec,
  createdAt: number,
): EventTemplate {
  if (!isChannelName(spec.channel))
    throw malformed(`not a channel name: ${JSON.stringify(spec.channel)}`)
  const tags: string[][] = [
    ['d', spec.channel],
    ['fleet', spec.fleet],
    ['creator', spec.creator],
  ]
  if (spec.private) tags.push(['private'])
  for (const m of new Set(spec.members ?? [])) tags.push(['p', m])
  if (!spec.private && tags.some((t) => t[0] === 'p')) {
    throw malformed('members are listed only for a private channel')
  }
  return { kind: Kind.ChannelDefinition, created_at: createdAt, tags, content: spec.about ?? '' }
}

function single(tags: string[][], name: string): string | undefined {
  const found = tags.filter((t) => t[0] === name)
  if (found.length > 1) throw malformed(`more than one ${name} tag`)
  if (found.length === 1 && found[0]!.length < 2) throw malformed(`the ${name} tag has no value`)
  return found[0]?.[1]
}

/**
 * Parses a kind-34140 event's tags. Throws KithError('invalid') whose message starts with
 * `malformed:` and names the problem. Does not check id, signature or authority.
 */
export function parseChannelDefinition(event: NostrEvent): ChannelDefinition {
  if (event.kind !== Kind.ChannelDefinition) {
    throw malformed(`a channel definition is kind ${Kind.ChannelDefinition}`)
  }
  const { tags } = event
  const channel = single(tags, 'd')
  if (!isChannelName(channel)) {
    throw malformed('d must be a channel name (1-64 of a-z 0-9 _ . -, no #)')
  }
  const fleet = single(tags, 'fleet')
  if (!isHex64(fleet)) throw malformed('fleet must be the founder 64-hex pubkey')
  const creator = single(tags, 'creator')
  if (!isHex64(creator)) throw malformed('creator must be a 64-hex pubkey')
  const privateTags = tags.filter((t) => t[0] === 'private')
  if (privateTags.length > 1) throw malformed('more than one private tag')
  if (privateTags.some((t) => t.length !== 1)) throw malformed('the private tag has no value')
  const isPrivate = privateTags.length === 1
  const members: string[] = []
  for (const t of tags) {
    if (t[0] !== 'p') continue
    if (!isHex64(t[1])) throw malformed('p (member) tags hold 64-hex pubkeys')
    if (!members.includes(t[1])) members.push(t[1])
  }
  if (!isPrivate && members.length > 0) {
    throw malformed('an open channel lists no members (add a private tag)')
  }
  return {
    id: event.id,
    author: event.pubkey,
    createdAt: event.created_at,
    channel,
    fleet,
    creator,
    private: isPrivate,
    members,
    about: event.content,
  }
}

/**
 * The channels an event belongs to: its `h` values, and for a channel definition its `d`. An
 * event in any private channel is readable only by that channel's members.
 */
export function channelsOfEvent(event: Pick<NostrEvent, 'kind' | 'tags'>): string[] {
  const out: string[] = []
  for (const t of event.tags) {
    const value = t[1]
    if (value === undefined) continue
    if (t[0] === 'h' || (t[0] === 'd' && event.kind === Kind.ChannelDefinition)) {
      if (!out.includes(value)) out.push(value)
    }
  }
  return out
}
