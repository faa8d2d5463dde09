import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { personOf } from '../grants/members.js'
import type { GrantVerifier } from '../grants/verifier.js'
import type { EventStore } from '../store/event-store.js'
import { npubEncode } from 'nostr-tools/nip19'

export interface Who {
  pubkey: string
  name: string
  /** person (an owner), device, agent, or unknown. */
  role: 'person' | 'device' | 'agent' | 'unknown'
  /** For agents: the owner's display name, as "authorized by". */
  authorizedBy?: string
}

/**
 * The name in a key's newest kind-0 profile, if this store holds one. A device names itself this
 * way (its own key signs it; kith device rename), and every display prefers it to a grant's name.
 */
export function profileNameOf(events: EventStore, pubkey: string): string | undefined {
  const row = events.query([{ kinds: [Kind.Profile], authors: [pubkey], limit: 1 }], {
    defaultLimit: 1,
    maxLimit: 1,
  })[0]
  if (row === undefined) return undefined
  try {
    const profile = JSON.parse((JSON.parse(row.raw) as NostrEvent).content) as { name?: unknown }
    return typeof profile.name === 'string' && profile.name !== '' ? profile.name : undefined
  } catch {
    // A profile with unparseable content simply has no name.
    return undefined
  }
}

const short = (pubkey: string) => `${npubEncode(pubkey).slice(0, 12)}…`

/**
 * Display names for keys and @name resolution: a kind-0 profile's name wins, then the name on
 * the key's grant. Roles come from grants (the fleet's founder is a person).
 */
export class Names {
  constructor(
    private readonly grants: GrantVerifier,
    private readonly events: EventStore,
  ) {}

  private profileName(pubkey: string): string | undefined {
    return profileNameOf(this.events, pubkey)
  }

  who(pubkey: string, now = Math.floor(Date.now() / 1000)): Who {
    const d = this.grants.authorize(pubkey, { now })
    const grant = d.ok
      ? d.chain[d.chain.length - 1]
      : this.grants.allGrants().find((g) => g.subject === pubkey)
    const name = this.profileName(pubkey) ?? grant?.name ?? short(pubkey)
    if (pubkey === this.grants.founder || grant?.role === 'owner')
      return { pubkey, name, role: 'person' }
    if (grant === undefined) return { pubkey, name, role: 'unknown' }
    if (grant.role === 'device') return { pubkey, name, role: 'device' }
    // An agent is authorized by its person (a revoked one: shown as the founder's).
    const owner = personOf(this.grants, pubkey, now) ?? this.grants.founder
    return { pubkey, name, role: 'agent', authorizedBy: this.who(owner, now).name }
  }

  /** @name → pubkey among this fleet's granted keys (devices, agents, owners), newest first. */
  resolve(name: string): string | undefined {
    const lower = name.toLowerCase()
    const grants = [...this.grants.allGrants()].reverse()
    for (const g of grants) {
      if ((this.profileName(g.subject) ?? g.name)?.toLowerCase() === lower) return g.subject
    }
    return undefined
  }

  /** "claude (agent, authorized by alice)" */
  label(pubkey: string): string {
    const w = this.who(pubkey)
    if (w.role === 'agent') return `${w.name} (agent, authorized by ${w.authorizedBy ?? '?'})`
    if (w.role === 'unknown') return w.name
    return `${w.name} (${w.role})`
  }
}
