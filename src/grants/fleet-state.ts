import { checkFleetTag } from '../events/agent-binding.js'
import type { NostrEvent } from '../events/event.js'
import { isEphemeralKind, Kind } from '../events/kinds.js'
import { KithError } from '../errors.js'
import { channelRefusal, ChannelBook } from './channels.js'
import { grantCodePrefix } from './codes.js'
import { plaintextRefusal, settingSkewSeconds } from './e2e-sealing.js'
import { actionOf, fleetActor, mayAdmit, pushSubscriber } from './event-authority.js'
import {
  GrantVerifier,
  maxPending,
  pendingMaxAgeSeconds,
  type VerifierOptions,
} from './verifier.js'

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
      /**
       * Taken as history only (opts.history): its author's standing ended since, but it was
       * signed while the author stood. Shown, never acted on.
       */
      past?: true
    }
  | { ok: false; error: KithError }

export interface AdmitOptions {
  beforeChange?: (event: NostrEvent) => void
  keepPending?: boolean
  /** A reader's admission: what a since-revoked author signed while it stood is history. */
  history?: boolean
  /** Brought by a hub key (peering), not by a member's own connection. */
  relayed?: boolean
}

const isAuthorityKind = (kind: number) => kind === Kind.Grant || kind === Kind.Revocation

/**
 * Kinds held, as pending grants are, while their author is not known yet: a catch-up pages newest
 * first, so a definition or an envelope can come a batch before the grant of whoever signed it,
 * and dropping it would leave a channel reading as open, or a key missing, until a full resync.
 */
const heldKinds: ReadonlySet<number> = new Set([
  Kind.ChannelDefinition,
  Kind.KeyEnvelope,
  Kind.FleetSetting,
])

/**
 * Admission order inside a batch: grants, revocations, definitions, fleet settings, then
 * everything else (a setting decides whether a plaintext message in the same batch is taken).
 */
function admissionRank(kind: number): number {
  if (kind === Kind.Grant) return 0
  if (kind === Kind.Revocation) return 1
  if (kind === Kind.ChannelDefinition) return 2
  if (kind === Kind.FleetSetting) return 3
  return 4
}

/**
 * The fleet as one pure state: grant chains, revocations and channel definitions, and the one
 * admission rule that hubs and nodes both apply to every event they take (kith-hub, "EVENT";
 * kith-grants; kith-channels). Signatures are checked by the caller first.
 */
export class FleetState {
  readonly grants: GrantVerifier
  readonly channels: ChannelBook
  /**
   * The fleet's settings (kith-e2e/1) whose author had standing at their date, every version:
   * whether the fleet sealed when an event was made decides whether its plaintext is taken.
   */
  private readonly settings = new Map<string, NostrEvent>()
  /** Events of `heldKinds` whose author had no grant yet, oldest received first (keepPending). */
  private readonly held = new Map<string, { event: NostrEvent; receivedAt: number }>()
  private readonly maxHeld: number
  private readonly heldMaxAge: number
  /** A grant was accepted since the held events were last tried. */
  private retryDue = false

  constructor(opts: VerifierOptions) {
    this.grants = new GrantVerifier(opts)
    this.channels = new ChannelBook(this.grants)
    this.maxHeld = opts.maxPending ?? maxPending
    this.heldMaxAge = opts.pendingMaxAgeSeconds ?? pendingMaxAgeSeconds
  }

  /** How many events wait for their author's grant. */
  get heldCount(): number {
    return this.held.size
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
    /** Every stored version of the fleet's setting (kind 34145). */
    settings?: Iterable<NostrEvent>
  }): void {
    for (const e of input.authority) {
      if (isAuthorityKind(e.kind)) this.grants.add(e, { verified: true, keepPending: true })
    }
    for (const e of input.settings ?? []) this.noteSetting(e)
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
   * `history` (readers: nodes and the web app, never hubs): an event whose author was revoked
   * or expired since is still taken, marked `past`, when it was signed while the author stood
   * (its date before the revocation's, inside the grant's window, not ahead of now), so every
   * device tells the same history.
   */
  admit(event: NostrEvent, now: number, opts: AdmitOptions = {}): Admission {
    try {
      return this.admitOrThrow(event, now, opts)
    } catch (err) {
      if (!(err instanceof KithError)) throw err
      if (opts.keepPending === true && this.mayHold(event)) {
        this.hold(event, now)
        return {
          ok: false,
          error: new KithError(
            'not-found',
            'held: its author has no known grant yet; kept and tried again as grants arrive',
            { reason: 'held' },
          ),
        }
      }
      return { ok: false, error: err }
    }
  }

  /** Admits a batch in the order that lets later events rely on earlier ones. */
  admitBatch(
    events: readonly NostrEvent[],
    now: number,
    opts: { keepPending?: boolean; history?: boolean } = {},
  ): { event: NostrEvent; admission: Admission }[] {
    const ordered = [...events].sort(byAdmissionOrder)
    const out = ordered.map((event) => ({ event, admission: this.admit(event, now, opts) }))
    // Retried as the batch was admitted: a reader's held event is judged as history too, so
    // the order it arrived in does not decide it.
    if (opts.keepPending === true) out.push(...this.retryHeld(now, opts))
    return out
  }

  /** An event waits for its author when it is of a held kind and its author has no grant at all. */
  private mayHold(event: NostrEvent): boolean {
    return (
      heldKinds.has(event.kind) &&
      event.pubkey !== this.founder &&
      this.grants.grantsOf(event.pubkey).length === 0
    )
  }

  /** Keeps one, bounded as pending grants are: at most maxPending, none older than its age. */
  private hold(event: NostrEvent, now: number): void {
    for (const [id, h] of this.held) {
      if (h.receivedAt >= now - this.heldMaxAge) break
      this.held.delete(id)
    }
    this.held.delete(event.id)
    while (this.held.size >= this.maxHeld) this.held.delete(this.held.keys().next().value!)
    this.held.set(event.id, { event, receivedAt: now })
  }

  /**
   * Tries the held events again once grants came, in admission order, until nothing more is
   * placed. What is taken now, or refused for another reason, is returned (and held no more);
   * what still waits for its author stays.
   */
  private retryHeld(
    now: number,
    opts: { history?: boolean },
  ): { event: NostrEvent; admission: Admission }[] {
    const out: { event: NostrEvent; admission: Admission }[] = []
    while (this.retryDue && this.held.size > 0) {
      this.retryDue = false
      const waiting = [...this.held.values()].map((h) => h.event).sort(byAdmissionOrder)
      for (const event of waiting) {
        if (this.mayHold(event)) continue
        this.held.delete(event.id)
        out.push({
          event,
          admission: this.admit(event, now, opts.history === true ? { history: true } : {}),
        })
      }
    }
    this.retryDue = false
    return out
  }

  private admitOrThrow(event: NostrEvent, now: number, opts: AdmitOptions): Admission {
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
      if (r.status === 'accepted' && this.held.size > 0) this.retryDue = true
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
      if (opts.relayed === true && !this.grants.isMember(event.pubkey, now).ok) {
        // A removed person can still sign a definition dated before their removal; a member's
        // own connection is the only way in for it (kith-channels, "Removal"), never a peering.
        throw new KithError(
          'restricted',
          'removed-author: a definition by a key that is not a member now is not taken from a peer hub',
          { reason: 'removed-author' },
        )
      }
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
      // the founder or an admin made before their removal is taken (and kept, so it still seals)
      // by a hub or node that learns of the removal first, so every side holds the setting that
      // decides, whatever the order.
      this.noteSetting(event)
      opts.beforeChange?.(event)
      return { ok: true, store: true, note: '', revoked: false, authority: false }
    }
    const query = { kind: event.kind, channels: hValues(event) }
    let d = this.grants.authorize(event.pubkey, { now, ...query })
    let past = false
    if (
      !d.ok &&
      opts.history === true &&
      (d.code === 'revoked' || d.code === 'expired') &&
      !isEphemeralKind(event.kind) &&
      event.created_at <= now + settingSkewSeconds
    ) {
      const then = this.grants.authorize(event.pubkey, {
        now: event.created_at,
        signedAt: event.created_at,
        ...query,
      })
      if (then.ok) [d, past] = [then, true]
    }
    if (!d.ok) {
      throw new KithError('restricted', `${d.code}: ${d.reason}`, { reason: d.code })
    }
    this.mayTake(event, past)
    // History is judged at its date: the channel's definition then, and the person the author
    // stood under then (a revocation dated after it set aside).
    const c = past
      ? this.channels.mayPost(event, event.created_at, event.created_at)
      : this.channels.mayPost(event, now)
    if (!c.ok) throw channelRefusal(c)
    const plain = plaintextRefusal(event, this.settings.values(), this.channels, this.founder, now)
    if (plain !== undefined) throw plain
    opts.beforeChange?.(event)
    // Evidence that the channel is in use (a plain owner may not define it over others' posts);
    // only what is stored, so a replay of the store finds the same.
    if (!isEphemeralKind(event.kind)) this.channels.noteEvent(event)
    return {
      ok: true,
      store: true,
      note: '',
      revoked: false,
      authority: false,
      ...(past ? { past: true as const } : {}),
    }
  }

  private mayTake(event: NostrEvent, past: boolean): void {
    const refusal = refuseByTable(this, event, past)
    if (refusal !== undefined) throw refusal
  }

  /**
   * Keeps a setting that may count (its author had standing at its date); others decide nothing.
   * Admission calls it; so does a node for a setting it signed itself.
   */
  noteSetting(event: NostrEvent): void {
    if (event.kind !== Kind.FleetSetting) return
    if (!this.channels.hadAuthority(event.pubkey, event.created_at, Kind.FleetSetting)) return
    this.settings.set(event.id, event)
  }
}

function byAdmissionOrder(a: NostrEvent, b: NostrEvent): number {
  return admissionRank(a.kind) - admissionRank(b.kind) || a.created_at - b.created_at
}

/**
 * The "who" of admission, asked of the authority table (event-authority.ts): the event's row and
 * its author's classes at the event's date. Grants, revocations and definitions ask it in the
 * verifier and the channel book, where their structure and date are read.
 */
function refuseByTable(state: FleetState, event: NostrEvent, past: boolean): KithError | undefined {
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
  const classes = fleetActor(state.grants, event.pubkey, event.created_at, past)
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
