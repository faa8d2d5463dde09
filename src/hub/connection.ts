import { randomBytes } from 'node:crypto'
import type { Socket } from 'node:net'
import type { WebSocket } from 'ws'
import { KithError, toNostrMessage } from '../errors.js'
import { parseEvent, type NostrEvent } from '../events/event.js'
import { parseFilter, type Filter } from '../events/filter.js'
import { isEphemeralKind, Kind } from '../events/kinds.js'
import { checkAuthEvent } from '../events/nip42.js'
import { checkEventPolicy } from './policy.js'
import { ChannelGate } from './channel-gate.js'
import { pairingIdOf } from './pairing-lane.js'
import type { HubContext } from './context.js'

const verifyMessages = {
  'bad-id': 'event id does not match its content',
  'bad-sig': 'bad signature',
} as const

/** Best effort: the id of an event inside a frame we will not parse, so OK can name it. */
function sniffEventId(text: string): string {
  return /"id"\s*:\s*"([0-9a-f]{64})"/.exec(text)?.[1] ?? ''
}

/** One client connection: NIP-01 verbs, NIP-42 AUTH state and its subscriptions. */
export class Connection {
  readonly challenge = randomBytes(16).toString('hex')
  /** Keys this connection has proven, in AUTH order. */
  readonly authed = new Set<string>()
  alive = true
  private corked = false
  private readonly gate: ChannelGate

  constructor(
    readonly ws: WebSocket,
    private readonly ctx: HubContext<Connection>,
    /** The TCP/TLS socket under `ws`, used only to coalesce writes. */
    private readonly socket: Socket,
    readonly remote: string,
  ) {
    this.gate = new ChannelGate(ctx.channels, this.authed)
    this.send(['AUTH', this.challenge])
  }

  send(message: unknown[]): void {
    this.sendRaw(JSON.stringify(message))
  }

  /**
   * Frames sent in one synchronous run (the OKs of a group commit, a REQ's stored events) leave
   * in one write: the socket is corked on the first send and uncorked on the next tick. That
   * cuts a syscall per frame, a large share of the hub's main-thread time under load.
   */
  sendRaw(frame: string): void {
    if (this.ws.readyState !== this.ws.OPEN) return
    if (!this.corked) {
      this.corked = true
      this.socket.cork()
      process.nextTick(() => {
        this.corked = false
        this.socket.uncork()
      })
    }
    this.ws.send(frame)
  }

  private ok(id: string, accepted: boolean, message: string): void {
    this.send(['OK', id, accepted, message])
  }

  private notice(message: string): void {
    this.send(['NOTICE', message])
  }

  /** True while at least one key this connection proved is a member now. */
  get isMemberConnection(): boolean {
    const now = this.ctx.now()
    for (const key of this.authed) if (this.ctx.grants.isMember(key, now).ok) return true
    return false
  }

  /** May this connection receive `event` (private channels: members only)? */
  mayReceive(event: NostrEvent): boolean {
    return this.gate.mayReceive(event, this.ctx.now())
  }

  /**
   * Forgets keys that are no longer members; when none is left, ends every subscription with
   * `restricted: revoked` and closes the connection (1008). Returns true when it closed.
   */
  enforceMembership(): boolean {
    const now = this.ctx.now()
    let reason = ''
    for (const key of this.authed) {
      const d = this.ctx.grants.isMember(key, now)
      if (!d.ok) {
        this.authed.delete(key)
        reason = `${d.code}: ${d.reason}`
      }
    }
    if (reason === '' || this.authed.size > 0) return false
    for (const subId of this.ctx.subs.ids(this)) {
      this.send(['CLOSED', subId, `restricted: ${reason}`])
    }
    this.ctx.subs.dropConnection(this)
    this.ws.close(1008, reason.slice(0, 120))
    return true
  }

  handle(data: Buffer): void {
    this.alive = true
    const { limits } = this.ctx
    const text = data.toString('utf8')
    if (data.length > limits.maxFrameBytes) {
      const reason = `invalid: frame too large (${data.length} bytes, max ${limits.maxFrameBytes})`
      if (text.startsWith('["EVENT"')) this.ok(sniffEventId(text), false, reason)
      else this.notice(reason)
      return
    }
    let msg: unknown
    try {
      msg = JSON.parse(text)
    } catch {
      // A malformed frame is the client's fault; tell it and keep the connection.
      this.notice('invalid: malformed JSON')
      return
    }
    if (!Array.isArray(msg) || typeof msg[0] !== 'string') {
      this.notice('invalid: a message is a JSON array whose first item is a verb')
      return
    }
    switch (msg[0]) {
      case 'EVENT':
        this.onEvent(msg[1], data.length)
        return
      case 'REQ':
        this.onReq(msg)
        return
      case 'CLOSE':
        this.onClose(msg[1])
        return
      case 'AUTH':
        this.onAuth(msg[1])
        return
      default:
        this.notice(`invalid: unknown verb ${JSON.stringify(msg[0]).slice(0, 40)}`)
    }
  }

  /** The event in an EVENT or AUTH frame, or undefined after answering OK false. */
  private parseOrRefuse(value: unknown): NostrEvent | undefined {
    try {
      return parseEvent(value)
    } catch (err) {
      const id = (value as { id?: unknown } | null)?.id
      this.ok(typeof id === 'string' ? id : '', false, toNostrMessage(err))
      return undefined
    }
  }

  private onEvent(value: unknown, frameBytes: number): void {
    const event = this.parseOrRefuse(value)
    if (event === undefined) return
    if (event.kind === Kind.ClientAuth) {
      this.ok(event.id, false, 'invalid: AUTH events are sent with AUTH, not EVENT')
      return
    }
    if (event.kind === Kind.Pairing) {
      this.onPairingEvent(event, frameBytes)
      return
    }
    const isGrantEvent = event.kind === Kind.Grant || event.kind === Kind.Revocation
    if (!this.isMemberConnection) {
      // Grants and revocations carry their own authority, so a device may publish its chain
      // before it can authenticate; only issuers authorized right now may use this lane, which
      // keeps strangers from spending the hub's signature checks.
      const issuer = isGrantEvent
        ? this.ctx.grants.authorize(event.pubkey, { now: this.ctx.now(), kind: event.kind })
        : undefined
      if (issuer?.ok !== true) {
        this.ok(event.id, false, 'auth-required: authenticate (NIP-42) as a fleet member first')
        return
      }
    }
    const raw = JSON.stringify(event)
    this.ctx.verifier.verify(event, raw).then(
      (result) => this.afterVerify(event, raw, result),
      (err: unknown) => {
        this.ctx.log(`verify failed: ${String(err)}`)
        this.ok(event.id, false, 'error: could not verify the event; try again')
      },
    )
  }

  private afterVerify(event: NostrEvent, raw: string, result: 'ok' | 'bad-id' | 'bad-sig'): void {
    if (result !== 'ok') {
      this.ok(event.id, false, `invalid: ${verifyMessages[result]}`)
      return
    }
    const ctx = this.ctx
    const now = ctx.now()
    // The one admission rule hubs and nodes share (grants, channels); the hub adds its rate and
    // size checks before anything changes.
    const admission = ctx.state.admit(event, now, {
      beforeChange: () => {
        ctx.rate.take(event.pubkey, Date.now())
        checkEventPolicy(event, ctx.limits, now)
      },
    })
    if (!admission.ok) {
      this.ok(event.id, false, toNostrMessage(admission.error))
      return
    }
    // A revocation takes effect before it is stored, so no event slips in meanwhile.
    if (admission.revoked) ctx.enforce()
    if (!admission.store) {
      this.ok(event.id, true, admission.note)
      return
    }
    if (isEphemeralKind(event.kind)) {
      ctx.fanOut(raw, event)
      this.ok(event.id, true, '')
      return
    }
    ctx.commit.submit(event, raw, (outcome) => {
      if (outcome instanceof Error) {
        ctx.log(`store failed: ${outcome.message}`)
        this.ok(event.id, false, 'error: could not store the event; try again')
      } else if (outcome === 'stored') {
        this.ok(event.id, true, admission.note)
        ctx.fanOut(raw, event)
      } else if (outcome === 'duplicate') {
        this.ok(event.id, true, 'duplicate: already have this event')
      } else {
        // An older version (kept for the set, not served): say why, when admission knows.
        this.ok(
          event.id,
          true,
          admission.note || 'duplicate: a newer version of this event is stored',
        )
      }
    })
  }

  /**
   * The pairing lane: kind 24140 for one pairing id, with or without AUTH. Never stored; relayed
   * only to the other party's lane subscription.
   */
  private onPairingEvent(event: NostrEvent, frameBytes: number): void {
    const { lane } = this.ctx
    const pid = pairingIdOf(event.tags)
    if (pid === undefined) {
      this.ok(
        event.id,
        false,
        'invalid: a pairing event carries one d tag with the 32-hex pairing id',
      )
      return
    }
    if (frameBytes > lane.maxFrameBytes) {
      this.ok(event.id, false, `invalid: pairing frames are at most ${lane.maxFrameBytes} bytes`)
      return
    }
    if (!lane.take(this)) {
      this.ok(event.id, false, 'rate-limited: pairing: too many events on this connection')
      return
    }
    const refused = lane.join(this, pid, (party, subId, reason) =>
      party.send(['CLOSED', subId, `restricted: ${reason}`]),
    )
    if (refused !== undefined) {
      this.ok(event.id, false, `restricted: ${refused}`)
      return
    }
    const raw = JSON.stringify(event)
    this.ctx.verifier.verify(event, raw).then(
      (result) => {
        if (result !== 'ok') {
          this.ok(event.id, false, `invalid: ${verifyMessages[result]}`)
          return
        }
        lane.fanOut(pid, this, (to, subId) =>
          to.sendRaw(`["EVENT",${JSON.stringify(subId)},${raw}]`),
        )
        this.ok(event.id, true, '')
      },
      (err: unknown) => {
        this.ctx.log(`verify failed: ${String(err)}`)
        this.ok(event.id, false, 'error: could not verify the event; try again')
      },
    )
  }

  /** A REQ that is exactly {kinds:[24140], "#d":[pid]} is a pairing-lane subscription. */
  private laneSubscription(subId: string, filters: unknown[]): boolean {
    if (filters.length !== 1) return false
    const f = filters[0] as Record<string, unknown> | null
    if (typeof f !== 'object' || f === null) return false
    const keys = Object.keys(f).filter((k) => k !== 'limit')
    const kinds = f.kinds
    const d = f['#d']
    if (
      keys.length !== 2 ||
      !Array.isArray(kinds) ||
      kinds.length !== 1 ||
      kinds[0] !== Kind.Pairing
    )
      return false
    if (!Array.isArray(d) || d.length !== 1 || typeof d[0] !== 'string') return false
    const pid = pairingIdOf([['d', d[0]]])
    if (pid === undefined) {
      this.send(['CLOSED', subId, 'invalid: a pairing id is 32 hex characters'])
      return true
    }
    const refused = this.ctx.lane.join(this, pid, (party, s, reason) =>
      party.send(['CLOSED', s, `restricted: ${reason}`]),
    )
    if (refused !== undefined) {
      this.send(['CLOSED', subId, `restricted: ${refused}`])
      return true
    }
    this.ctx.lane.subscribe(this, pid, subId)
    this.send(['EOSE', subId])
    return true
  }

  private onReq(msg: unknown[]): void {
    const { limits, subs } = this.ctx
    const subId = msg[1]
    if (typeof subId !== 'string' || subId.length === 0 || subId.length > limits.maxSubIdLength) {
      this.notice(`invalid: REQ needs a subscription id of 1-${limits.maxSubIdLength} characters`)
      return
    }
    if (this.laneSubscription(subId, msg.slice(2))) return
    const closed = (reason: string) => this.send(['CLOSED', subId, reason])
    if (!this.isMemberConnection) {
      closed('auth-required: authenticate (NIP-42) as a fleet member first')
      return
    }
    const rawFilters = msg.slice(2)
    if (rawFilters.length === 0 || rawFilters.length > limits.maxFilters) {
      closed(`invalid: REQ takes 1-${limits.maxFilters} filters`)
      return
    }
    let filters: Filter[]
    try {
      const filterLimits = {
        maxValues: limits.maxFilterValues,
        maxTagConditions: 8,
        maxTagValueLength: 1024,
      }
      filters = rawFilters.map((f) => parseFilter(f, filterLimits))
    } catch (err) {
      closed(toNostrMessage(err))
      return
    }
    if (!subs.has(this, subId) && subs.count(this) >= limits.maxSubscriptions) {
      closed(`error: too many subscriptions on this connection (max ${limits.maxSubscriptions})`)
      return
    }
    // Query and registration happen in the same synchronous turn, so no commit can fall between
    // the stored results and the live stream.
    let rows
    try {
      rows = this.ctx.store.query(filters, limits, this.gate.hidden(this.ctx.now()))
    } catch (err) {
      this.ctx.log(`query failed: ${String(err)}`)
      closed('error: query failed')
      return
    }
    const prefix = `["EVENT",${JSON.stringify(subId)},`
    for (const row of rows) this.sendRaw(`${prefix}${row.raw}]`)
    this.send(['EOSE', subId])
    subs.set(this, subId, filters)
  }

  private onClose(subId: unknown): void {
    if (typeof subId !== 'string') {
      this.notice('invalid: CLOSE needs a subscription id')
      return
    }
    this.ctx.subs.delete(this, subId)
    this.ctx.lane.unsubscribe(this, subId)
  }

  private onAuth(value: unknown): void {
    const event = this.parseOrRefuse(value)
    if (event === undefined) return
    this.ctx.verifier.verify(event).then(
      (result) => {
        if (result !== 'ok') {
          this.ok(event.id, false, `invalid: ${verifyMessages[result]}`)
          return
        }
        try {
          checkAuthEvent(event, {
            challenge: this.challenge,
            relayUrls: this.ctx.relayUrls,
            now: this.ctx.now(),
          })
          const d = this.ctx.grants.isMember(event.pubkey, this.ctx.now())
          if (!d.ok) throw new KithError('restricted', `${d.code}: ${d.reason}`)
        } catch (err) {
          this.ok(event.id, false, toNostrMessage(err))
          return
        }
        this.authed.add(event.pubkey)
        this.ok(event.id, true, '')
      },
      (err: unknown) => {
        this.ctx.log(`verify failed: ${String(err)}`)
        this.ok(event.id, false, 'error: could not verify the AUTH event; try again')
      },
    )
  }
}
