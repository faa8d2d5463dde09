import { checkFleetTag } from '../events/agent-binding.js'
import type { NostrEvent } from '../events/event.js'
import { isEphemeralKind, Kind } from '../events/kinds.js'
import { KithError } from '../errors.js'
import { channelRefusal, ChannelBook } from './channels.js'
import { grantCodePrefix } from './codes.js'
import { settingSkewSeconds } from './e2e-sealing.js'
import { actionOf, fleetActor, mayAdmit, pushSubscriber } from './event-authority.js'
import { GrantVerifier, type VerifierOptions } from './verifier.js'

/** What admitting one event did, for the hub's OK and the node's follow-up. */
export type Admission =
  | {
      ok: true
      /** False for a definition older than the one in effect: answered OK, not stored. */
      store: boolean
      /** The OK message (`duplicate: …`, `held: …`), empty when there is nothing to say. */
      note: string
      /** A revocation that took effect: live connections and queued work must be re-checked. */
      revoked: boolean
      /** A grant or revocation was added (nodes re-publish it to their other hubs). */
      authority: boolean
    }
  | { ok: false; error: KithError }

const isAuthorityKind = (kind: number) => kind === Kind.Grant || kind === Kind.Revocation

/** Admission order inside a batch: grants, revocations, definitions, then everything else. */
function admissionRank(kind: number): number {
  if (kind === Kind.Grant) return 0
  if (kind === Kind.Revocation) return 1
  if (kind === Kind.ChannelDefinition) return 2
  return 3
}

/**
 * The fleet as one pure state: grant chains, revocations and channel definitions, and the one
 * admission rule that hubs and nodes both apply to every event they take (kith-hub, "EVENT";
 * kith-grants; kith-channels). Signatures are checked by the caller first.
 */
export class FleetState {
  readonly grants: GrantVerifier
  readonly channels: ChannelBook

  constructor(opts: VerifierOptions) {
    this.grants = new GrantVerifier(opts)
    this.channels = new ChannelBook(this.grants)
  }

  get founder(): string {
    return this.grants.founder
  }

  /**
   * Rebuilds the state from what a hub or node stored (each was admitted on its way in), in any
   * order: grants and revocations (held until what they name arrives), every kept version of
   * every channel definition, and the earliest event of each key in each channel.
   */
  replay(input: {
    authority: Iterable<NostrEvent>
    definitions?: Iterable<NostrEvent>
    firsts?: Iterable<{ channel: string; pubkey: string; createdAt: number }>
    /** Definitions stored before every version was kept (EventStore.legacyVersionIds). */
    legacy?: Iterable<string>
  }): void {
    for (const e of input.authority) {
      if (isAuthorityKind(e.kind)) this.grants.add(e, { verified: true, keepPending: true })
    }
    this.channels.replay({
      definitions: input.definitions ?? [],
      firsts: input.firsts ?? [],
      ...(input.legacy === undefined ? {} : { legacy: input.legacy }),
    })
  }

  /**
   * Admits one verified event at `now`, or says why not. `beforeChange` runs after the
   * read-only checks and before anything changes (the hub's rate and size checks; it throws a
   * KithError to refuse). `keepPending` holds grants whose parent is not known yet (nodes).
   */
  admit(
    event: NostrEvent,
    now: number,
    opts: { beforeChange?: (event: NostrEvent) => void; keepPending?: boolean } = {},
  ): Admission {
    try {
      return this.admitOrThrow(event, now, opts)
    } catch (err) {
      if (err instanceof KithError) return { ok: false, error: err }
      throw err
    }
  }

  /** Admits a batch in the order that lets later events rely on earlier ones. */
  admitBatch(
    events: readonly NostrEvent[],
    now: number,
    opts: { keepPending?: boolean } = {},
  ): { event: NostrEvent; admission: Admission }[] {
    const ordered = [...events].sort(
      (a, b) => admissionRank(a.kind) - admissionRank(b.kind) || a.created_at - b.created_at,
    )
    return ordered.map((event) => ({ event, admission: this.admit(event, now, opts) }))
  }

  private admitOrThrow(
    event: NostrEvent,
    now: number,
    opts: { beforeChange?: (event: NostrEvent) => void; keepPending?: boolean },
  ): Admission {
    // Made for another fleet that shares the key (kith-agents, "Binding"): never this fleet's.
    const bound = checkFleetTag(event, this.founder)
    if (!bound.ok) {
      throw new KithError('restricted', `wrong-fleet: ${bound.reason}`, { reason: 'wrong-fleet' })
    }
    if (isAuthorityKind(event.kind)) {
      opts.beforeChange?.(event)
      const r = this.grants.add(event, {
        verified: true,
        ...(opts.keepPending ? { keepPending: true, receivedAt: now } : {}),
      })
      if (r.status === 'rejected') {
        throw new KithError(grantCodePrefix(r.code), `${r.code}: ${r.reason}`, { reason: r.code })
      }
      const held = r.status === 'pending' || (r.status === 'accepted' && r.held === true)
      return {
        ok: true,
        // One that waits (a node's pending) is kept in memory only, bounded, and stored once
        // placed (GrantVerifier.drainPromoted): what cannot be placed does not grow node.db.
        store: r.status !== 'pending',
        note: held ? 'held: it names nothing this hub can act on yet; kept until it does' : '',
        revoked: event.kind === Kind.Revocation && r.status === 'accepted' && r.held !== true,
        authority: r.status === 'accepted',
      }
    }
    if (event.kind === Kind.ChannelDefinition) {
      // The author's standing is judged at the definition's date, as grants are judged by
      // structure (kith-channels, "Admission"): a removed creator's old definition still counts.
      opts.beforeChange?.(event)
      const r = this.channels.add(event, { now })
      if (r.status === 'rejected') throw channelRefusal(r)
      return {
        ok: true,
        // Every version is kept (a superseded one too), so the set decides, not the order.
        store: true,
        note:
          r.status === 'superseded'
            ? 'duplicate: a newer definition of this channel is in effect'
            : '',
        revoked: false,
        authority: false,
      }
    }
    if (event.kind === Kind.FleetSetting && event.created_at > now + settingSkewSeconds) {
      // A setting dated ahead would win newest-wins over every correction before its date.
      throw new KithError(
        'invalid',
        `future-dated: a fleet setting may be dated at most ${settingSkewSeconds} s ahead; check the clock`,
        { reason: 'future-dated' },
      )
    }
    if (
      event.kind === Kind.FleetSetting &&
      this.channels.hadAuthority(event.pubkey, event.created_at, Kind.FleetSetting)
    ) {
      // Judged at its date, as readers judge it (e2e-sealing) and as definitions are: a setting
      // the founder or an admin made before their removal is taken by a hub or node that learns
      // of the removal first, so every side holds the setting that decides, whatever the order.
      opts.beforeChange?.(event)
      return { ok: true, store: true, note: '', revoked: false, authority: false }
    }
    const d = this.grants.authorize(event.pubkey, {
      now,
      kind: event.kind,
      channels: hValues(event),
    })
    if (!d.ok) {
      throw new KithError('restricted', `${d.code}: ${d.reason}`, { reason: d.code })
    }
    this.mayTake(event)
    const c = this.channels.mayPost(event, now)
    if (!c.ok) throw channelRefusal(c)
    opts.beforeChange?.(event)
    // Evidence that the channel is in use (a plain owner may not define it over others' posts);
    // only what is stored, so a replay of the store finds the same.
    if (!isEphemeralKind(event.kind)) this.channels.noteEvent(event)
    return { ok: true, store: true, note: '', revoked: false, authority: false }
  }

  private mayTake(event: NostrEvent): void {
    const refusal = refuseByTable(this, event)
    if (refusal !== undefined) throw refusal
  }
}

/**
 * The "who" of admission, asked of the authority table (event-authority.ts): the event's row and
 * its author's classes at the event's date. Grants, revocations and definitions ask it in the
 * verifier and the channel book, where their structure and date are read.
 */
function refuseByTable(state: FleetState, event: NostrEvent): KithError | undefined {
  const action = actionOf(event)
  if (event.kind === Kind.PushSubscription) {
    const sender = event.tags.find((t) => t[0] === 'p')?.[1]
    const classes =
      sender === undefined
        ? fleetActor(state.grants, event.pubkey, event.created_at)
        : pushSubscriber(state.grants, event.pubkey, sender, event.created_at)
    if (mayAdmit(action, classes)) return undefined
    // Another person's device asking for this person's notifications (kith-notify).
    return new KithError(
      'restricted',
      "not-owner: a push subscription goes only to a node of its device's own person",
      { reason: 'not-owner' },
    )
  }
  const classes = fleetActor(state.grants, event.pubkey, event.created_at)
  if (mayAdmit(action, classes)) return undefined
  return new KithError(
    'restricted',
    `no-authority: the authority table does not let ${classes.join(', ')} take ${action}`,
    { reason: 'no-authority' },
  )
}

/** Every `h` value of an event: a grant's channel caps must allow each one. */
export function hValues(event: Pick<NostrEvent, 'tags'>): string[] {
  const out: string[] = []
  for (const t of event.tags)
    if (t[0] === 'h' && t[1] !== undefined && !out.includes(t[1])) out.push(t[1])
  return out
}
