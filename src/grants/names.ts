import { KithError } from '../errors.js'
import { didYouMean } from '../events/did-you-mean.js'
import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { profileNameIn } from '../events/profile.js'
import type { Grant } from './grant.js'
import { personOf } from './members.js'
import type { GrantVerifier } from './verifier.js'
import type { Filter } from '../events/filter.js'
import { decode as nip19Decode, npubEncode } from 'nostr-tools/nip19'

export interface Who {
  pubkey: string
  name: string
  /** person (an owner key), device, agent, or unknown. */
  role: 'person' | 'device' | 'agent' | 'unknown'
  /** For devices and agents: the display name of the person they belong to. */
  person?: string
  /** The key belongs to this node's own person. */
  mine?: boolean
  /** For agents: the owner's display name, as "authorized by". */
  authorizedBy?: string
}

/**
 * Where names read profiles (kind 0): a node's reads of node.db (`store/node-reads.ts`), or a
 * browser's events in memory. Only `{ kinds: [0], authors: [pubkey] }` is asked.
 */
export interface ProfileSource {
  newest(filter: Filter): NostrEvent | undefined
}

/**
 * The name in a key's newest kind-0 profile, if `events` holds one. A device names itself this
 * way (its own key signs it; kith device rename), and every display prefers it to a grant's name.
 */
export function profileNameOf(events: ProfileSource, pubkey: string): string | undefined {
  const profile = events.newest({ kinds: [Kind.Profile], authors: [pubkey] })
  return profile === undefined ? undefined : profileNameIn(profile)
}

const short = (pubkey: string) => `${npubEncode(pubkey).slice(0, 12)}…`
const nowSeconds = () => Math.floor(Date.now() / 1000)

/** A member key as names see it. */
interface NamedKey {
  pubkey: string
  /** Its own name: a person's name for an owner key, else profile or grant name. */
  name: string
  person: string
  isPerson: boolean
  /** When its newest grant was made (newest wins among one person's keys of the same name). */
  since: number
}

/**
 * Display names and @name resolution, so that no name passes for another person's:
 * - a **person** (the founder, an owner key) is named by the grant that admitted them (chosen by
 *   whoever admitted them; the founder is "founder"), never by a profile they publish themselves;
 *   two people of the same name are both shown with their npub;
 * - a **device** or **agent** is named by its kind-0 profile, else its grant, and always shown
 *   with its person (`alice [device of bob]`), except this node's own person's keys;
 * - `@name` resolves among the sender's own person's keys first, then to a person of that name,
 *   then fleet-wide only when one person has a key of that name; otherwise it is refused with
 *   the person-qualified candidates (`alice/helper`, `bob/helper`), a syntax `resolve` accepts.
 */
export class Names {
  constructor(
    private readonly grants: GrantVerifier,
    private readonly events: ProfileSource,
    /** This node's device key: its person's keys are shown without "of <person>". */
    private readonly self?: string,
  ) {}

  private profileName(pubkey: string): string | undefined {
    return profileNameOf(this.events, pubkey)
  }

  /** The newest grant of `pubkey` (any state), for names and roles of keys no longer members. */
  private newestGrant(pubkey: string): Grant | undefined {
    let newest: Grant | undefined
    for (const g of this.grants.allGrants()) {
      if (g.subject === pubkey && (newest === undefined || g.createdAt >= newest.createdAt))
        newest = g
    }
    return newest
  }

  /** The person a key belongs to now, or (no longer a member) the nearest owner above its grant. */
  private personOfKey(pubkey: string, now: number): string | undefined {
    const p = personOf(this.grants, pubkey, now)
    if (p !== undefined) return p
    let key = pubkey
    for (let depth = 0; depth < 8; depth++) {
      if (key === this.grants.founder) return key
      const g = this.newestGrant(key)
      if (g === undefined) return undefined
      if (g.role === 'owner') return g.subject
      key = g.issuer
    }
    return undefined
  }

  private isPersonKey(pubkey: string, now: number): boolean {
    if (pubkey === this.grants.founder) return true
    const d = this.grants.isMember(pubkey, now)
    const grant = d.ok ? d.chain[d.chain.length - 1] : this.newestGrant(pubkey)
    return grant?.role === 'owner'
  }

  /** A person's own name: their admission grant's (the founder: "founder"). */
  private rawPersonName(person: string): string {
    if (person === this.grants.founder) return 'founder'
    return this.newestGrant(person)?.name ?? short(person)
  }

  /** Every person of the fleet (founder and owner keys ever admitted) with their raw name. */
  private persons(): Map<string, string> {
    const persons = new Map<string, string>([[this.grants.founder, 'founder']])
    for (const g of this.grants.allGrants()) {
      if (g.role === 'owner') persons.set(g.subject, this.rawPersonName(g.subject))
    }
    return persons
  }

  /** Whether another person has the same name (then both are shown with their npub). */
  private personNameTaken(person: string, name: string): boolean {
    const lower = name.toLowerCase()
    for (const [p, n] of this.persons()) if (p !== person && n.toLowerCase() === lower) return true
    return false
  }

  /** A person as shown: their name, with their npub when another person has the same name. */
  personName(person: string): string {
    const name = this.rawPersonName(person)
    return this.personNameTaken(person, name) ? `${name} (${short(person)})` : name
  }

  /** A person as typed in a qualified name: their name when unique, else their npub. */
  private personHandle(person: string): string {
    const name = this.rawPersonName(person)
    return this.personNameTaken(person, name) ? npubEncode(person) : name
  }

  /** A device's or agent's own name: its profile's, else its grant's, else a short npub. */
  private keyName(pubkey: string): string {
    return this.profileName(pubkey) ?? this.newestGrant(pubkey)?.name ?? short(pubkey)
  }

  who(pubkey: string, now = nowSeconds()): Who {
    if (this.isPersonKey(pubkey, now))
      return { pubkey, name: this.personName(pubkey), role: 'person' }
    const grant = this.newestGrant(pubkey)
    const name = this.keyName(pubkey)
    if (grant === undefined) return { pubkey, name, role: 'unknown' }
    const person = this.personOfKey(pubkey, now) ?? this.grants.founder
    const mine =
      this.self !== undefined && personOf(this.grants, this.self, now) === person ? true : undefined
    const personName = this.personName(person)
    const base = { pubkey, name, person: personName, ...(mine ? { mine } : {}) }
    if (grant.role === 'agent') return { ...base, role: 'agent', authorizedBy: personName }
    return { ...base, role: 'device' }
  }

  /** `alice/helper`: a key's name qualified by its person (as `resolve` accepts it). */
  qualified(pubkey: string, now = nowSeconds()): string {
    const person = this.personOfKey(pubkey, now) ?? this.grants.founder
    const name = this.isPersonKey(pubkey, now) ? this.rawPersonName(pubkey) : this.keyName(pubkey)
    return `${this.personHandle(person)}/${name}`
  }

  /** The fleet's member keys now, named. */
  private members(now: number): NamedKey[] {
    const keys: NamedKey[] = []
    for (const pubkey of new Set([this.grants.founder, ...this.grants.subjects()])) {
      const d = this.grants.isMember(pubkey, now)
      if (!d.ok) continue
      const person = personOf(this.grants, pubkey, now)
      if (person === undefined) continue
      const isPerson = this.isPersonKey(pubkey, now)
      keys.push({
        pubkey,
        name: isPerson ? this.rawPersonName(pubkey) : this.keyName(pubkey),
        person,
        isPerson,
        since: d.chain[d.chain.length - 1]?.createdAt ?? 0,
      })
    }
    return keys
  }

  /** The person a typed person part names: their unique name, or their npub (or hex). */
  private findPerson(text: string): string | undefined {
    if (/^npub1/i.test(text) || /^[0-9a-f]{64}$/i.test(text)) {
      let hex = text.toLowerCase()
      if (hex.startsWith('npub1')) {
        try {
          const d = nip19Decode(hex)
          if (d.type !== 'npub') return undefined
          hex = d.data
        } catch {
          // Not an npub: it names nobody.
          return undefined
        }
      }
      return this.persons().has(hex) ? hex : undefined
    }
    const lower = text.toLowerCase()
    const found = [...this.persons()].filter(([, n]) => n.toLowerCase() === lower)
    if (found.length > 1)
      throw new KithError(
        'usage',
        `${found.length} people are named ${text}: use their npub (${found.map(([p]) => npubEncode(p)).join(', ')})`,
      )
    return found[0]?.[0]
  }

  /**
   * `@name` (or `person/name`) → the key it names, for a message from `sender`; undefined when
   * it names no member. Throws KithError('usage') listing the candidates when it is ambiguous.
   */
  resolve(text: string, sender: string, now = nowSeconds()): string | undefined {
    const typed = text.replace(/^@/, '')
    const newest = (ks: NamedKey[]) => ks.reduce((a, b) => (b.since > a.since ? b : a)).pubkey
    const keys = this.members(now)
    const slash = typed.indexOf('/')
    if (slash >= 0) {
      const person = this.findPerson(typed.slice(0, slash))
      const name = typed.slice(slash + 1).toLowerCase()
      const matches = keys.filter((k) => k.person === person && k.name.toLowerCase() === name)
      return matches.length === 0 ? undefined : newest(matches)
    }
    const lower = typed.toLowerCase()
    const named = keys.filter((k) => k.name.toLowerCase() === lower)
    const senderPerson = personOf(this.grants, sender, now)
    const own = named.filter((k) => k.person === senderPerson)
    if (own.length > 0) return newest(own)
    // A person's name is never taken by another person's device or agent of that name.
    const persons = named.filter((k) => k.isPerson)
    if (persons.length === 1) return persons[0]!.pubkey
    const owners = new Set(named.map((k) => k.person))
    if (owners.size === 0) return undefined
    if (owners.size === 1) return newest(named)
    const candidates = [...new Set(named.map((k) => this.qualified(k.pubkey, now)))].sort()
    throw new KithError(
      'usage',
      `@${typed} is ambiguous: ${candidates.join(', ')}; write one of those (person/name)`,
    )
  }

  /**
   * Why `@text` names no member, for the one-line refusal of a message that mentions it: a key
   * of that name that no longer counts (revoked, expired; the sender's own person's first), else
   * the nearest names of the fleet (did you mean).
   */
  unknownMention(text: string, sender: string, now = nowSeconds()): string {
    const typed = text.replace(/^@/, '')
    const slash = typed.indexOf('/')
    const name = (slash >= 0 ? typed.slice(slash + 1) : typed).toLowerCase()
    const senderPerson = personOf(this.grants, sender, now)
    const former = [...new Set(this.grants.allGrants().map((g) => g.subject))]
      .map((pubkey) => ({ pubkey, d: this.grants.isMember(pubkey, now) }))
      .filter(
        (k) =>
          !k.d.ok &&
          (this.isPersonKey(k.pubkey, now)
            ? this.rawPersonName(k.pubkey)
            : this.keyName(k.pubkey)
          ).toLowerCase() === name,
      )
      .sort(
        (a, b) =>
          Number(this.personOfKey(b.pubkey, now) === senderPerson) -
          Number(this.personOfKey(a.pubkey, now) === senderPerson),
      )[0]
    if (former !== undefined && !former.d.ok) {
      const how =
        former.d.code === 'revoked'
          ? 'was revoked'
          : former.d.code === 'expired'
            ? 'expired'
            : `no longer counts (${former.d.code})`
      const what = this.who(former.pubkey, now).role
      return `@${typed} ${how}: no ${what === 'unknown' ? 'key' : what} of that name is in this fleet now (kith agent list --fleet --all)`
    }
    const keys = this.members(now)
    const candidates =
      slash >= 0 ? keys.map((k) => this.qualified(k.pubkey, now)) : keys.map((k) => k.name)
    const near = didYouMean(typed, candidates)
    return `@${typed} names no one in this fleet${near.length === 0 ? '' : ` (did you mean ${near.map((n) => `@${n}`).join(' or ')}?)`}`
  }

  /** "claude (agent, authorized by alice)", "laptop (device of bob)" */
  label(pubkey: string): string {
    const w = this.who(pubkey)
    if (w.role === 'agent') return `${w.name} (agent, authorized by ${w.authorizedBy ?? '?'})`
    if (w.role === 'device' && !w.mine) return `${w.name} (device of ${w.person ?? '?'})`
    if (w.role === 'unknown') return w.name
    return `${w.name} (${w.role})`
  }
}

/**
 * The agent `text` names for `sender` (as a mention resolves), or a not-found error that says
 * why in one line: revoked, a device or person rather than an agent, or a typo (did you mean).
 */
export function resolveAgent(names: Names, text: string, sender: string): string {
  const typed = text.replace(/^@/, '')
  const key = names.resolve(typed, sender)
  if (key === undefined) throw new KithError('not-found', names.unknownMention(typed, sender))
  const who = names.who(key)
  if (who.role !== 'agent')
    throw new KithError('not-found', `@${typed} is a ${who.role}, not an agent`)
  return key
}
