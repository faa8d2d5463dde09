import { randomBytes } from 'node:crypto'
import type { Socket } from 'node:net'
import type { WebSocket } from 'ws'
import { KithError, toNostrMessage } from '../errors.js'
import { parseEvent, type NostrEvent } from '../events/event.js'
import { parseFilter, type Filter } from '../events/filter.js'
import { isEphemeralKind, Kind } from '../events/kinds.js'
import { checkAuthEvent } from '../events/nip42.js'
import type { VerifyResult } from '../verify/result.js'
import { checkEventPolicy } from './policy.js'
import { ChannelGate } from './channel-gate.js'
import { personOf } from '../grants/members.js'
import { NegSessions } from './negentropy.js'
import { pairingIdOf } from './pairing-lane.js'
import { addressGroup } from './admission.js'
import type { HubContext } from './context.js'
import type { Reservation } from './event-limits.js'
import { ReqJob, type SliceOutcome, type Streaming } from './req-scheduler.js'
import { StoredStream } from './stored-stream.js'

const verifyMessages = {
  'bad-id': 'event id does not match its content',
  'bad-sig': 'bad signature',
} as const

/** Best effort: the id of an event inside a frame we will not parse, so OK can name it. */
function sniffEventId(text: string): string {
  return /"id"\s*:\s*"([0-9a-f]{64})"/.exec(text)?.[1] ?? ''
}

/** One client connection: NIP-01 verbs, NIP-42 AUTH state and its subscriptions. */
export class Connection implements Streaming {
  readonly challenge = randomBytes(16).toString('hex')
  /** Keys this connection has proven, in AUTH order. */
  readonly authed = new Set<string>()
  alive = true
  private corked = false
  private readonly gate: ChannelGate
  /** The person whose connection cap this connection counts toward, once a member. */
  private countedAs: string | undefined
  /** AUTH frames received, successful or not. */
  private authAttempts = 0
  /** This connection's events and AUTHs waiting for their signature check. */
  private verifying = 0
  /** REQs whose stored part is still being sent, oldest first; only the first one runs. */
  private readonly jobs: ReqJob[] = []
  /** Live frames held back for those REQs, counted as unread output. */
  private heldBytes = 0
  private drainWait: NodeJS.Timeout | undefined
  /** Set while this connection's person has used up their REQ work budget. */
  private budgetWait: NodeJS.Timeout | undefined
  private ended = false
  private readonly neg: NegSessions

  constructor(
    readonly ws: WebSocket,
    private readonly ctx: HubContext<Connection>,
    /** The TCP/TLS socket under `ws`: writes are coalesced on it and its drain resumes REQs. */
    readonly socket: Socket,
    readonly remote: string,
  ) {
    this.gate = new ChannelGate(ctx.channels, this.authed)
    this.neg = new NegSessions(
      ctx.store,
      ctx.limits,
      {
        send: (frame) => this.send(frame),
        hidden: () => this.gate.hidden(this.ctx.now()),
        payer: () => this.payer(),
      },
      {
        work: ctx.reqWork,
        open: ctx.perPerson.negSessions,
        maxOpenPerPerson: ctx.limits.negMaxSessionsPerPerson,
        turns: ctx.negTurns,
      },
    )
    this.send(['AUTH', this.challenge])
  }

  send(message: unknown[]): void {
    this.sendRaw(JSON.stringify(message))
  }

  /**
   * Frames sent in one synchronous run (the OKs of a group commit, a REQ's stored events) leave
   * in one write: the socket is corked on the first send and uncorked on the next tick. That
   * cuts a syscall per frame, a large share of the hub's main-thread time under load.
   * A client that leaves more than `maxUnreadBytes` unread is closed.
   */
  sendRaw(frame: string): void {
    if (this.ended || this.ws.readyState !== this.ws.OPEN) return
    if (!this.corked) {
      this.corked = true
      this.socket.cork()
      process.nextTick(() => this.flush())
    }
    this.ws.send(frame)
    if (this.unread > this.ctx.limits.maxUnreadBytes) {
      this.closeSlow(`more than ${this.ctx.limits.maxUnreadBytes} bytes unread`)
    }
  }

  /** Writes what this turn has sent so far now, not at the end of the turn. */
  private flush(): void {
    if (!this.corked) return
    this.corked = false
    this.socket.uncork()
  }

  /** Output the client has not read yet: the socket's buffer and live events held for it. */
  get unread(): number {
    return this.ws.bufferedAmount + this.heldBytes
  }

  /** Cuts a client that does not read: a close frame could not reach it through the backlog. */
  private closeSlow(why: string): void {
    if (this.ended) return
    this.ctx.log(`closing slow reader ${this.remote}: ${why}`)
    this.end()
    this.ws.terminate()
  }

  /** Forgets the connection's work (it closed or is closing). */
  end(): void {
    if (this.ended) return
    this.ended = true
    clearTimeout(this.drainWait)
    clearTimeout(this.budgetWait)
    this.jobs.length = 0
    this.heldBytes = 0
    this.ctx.reqs.remove(this)
    this.neg.closeAll()
    if (this.countedAs !== undefined) {
      const { connections } = this.ctx.perPerson
      const n = (connections.get(this.countedAs) ?? 1) - 1
      if (n <= 0) connections.delete(this.countedAs)
      else connections.set(this.countedAs, n)
      this.countedAs = undefined
    }
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

  /** True when every member key this connection proved is a hub key: a peer hub relaying. */
  private isPeerConnection(now: number): boolean {
    let peer = false
    for (const key of this.authed) {
      const d = this.ctx.grants.isMember(key, now)
      if (!d.ok) continue
      if (d.role !== 'hub') return false
      peer = true
    }
    return peer
  }

  /** May this connection receive `event` (private channels: members only)? */
  mayReceive(event: NostrEvent): boolean {
    return this.gate.mayReceive(event, this.ctx.now())
  }

  /** A live event for subscription `subId`: sent now, or held while that REQ's stored part streams. */
  deliver(subId: string, id: string, frame: string): void {
    if (this.jobs.length > 0) {
      const job = this.jobs.find((j) => j.subId === subId)
      if (job !== undefined) {
        this.heldBytes += job.hold(id, frame)
        if (this.unread > this.ctx.limits.maxUnreadBytes) {
          this.closeSlow(`more than ${this.ctx.limits.maxUnreadBytes} bytes unread`)
        }
        return
      }
    }
    this.sendRaw(frame)
  }

  /**
   * Forgets keys that are no longer members; when none is left, ends every subscription with
   * `restricted: revoked` and closes the connection (1008). Returns true when it closed. The
   * revocation that caused it (`cause`), when there is one, is sent first on each subscription it
   * matches: a node checks a hub's "revoked" against its own grant book (kith-hub, "AUTH"), so
   * the hub hands over the signed proof before it cuts the connection.
   */
  enforceMembership(cause?: NostrEvent): boolean {
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
    if (cause !== undefined)
      for (const subId of this.ctx.subs.matching(this, cause)) this.send(['EVENT', subId, cause])
    for (const subId of this.ctx.subs.ids(this)) {
      this.send(['CLOSED', subId, `restricted: ${reason}`])
    }
    this.ctx.subs.dropConnection(this)
    this.end()
    this.ws.close(1008, reason.slice(0, 120))
    return true
  }

  handle(data: Buffer): void {
    this.alive = true
    if (this.ended) return
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
      case 'NEG-OPEN':
        this.onNegOpen(msg)
        return
      case 'NEG-MSG':
        if (typeof msg[1] === 'string' && typeof msg[2] === 'string') {
          if (this.isMemberConnection) this.neg.message(msg[1], msg[2])
          else
            this.send([
              'NEG-ERR',
              msg[1],
              'auth-required: authenticate (NIP-42) as a fleet member first',
            ])
        } else this.notice('invalid: NEG-MSG takes a subscription id and a hex message')
        return
      case 'NEG-CLOSE':
        if (typeof msg[1] === 'string') this.neg.close(msg[1])
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

  /**
   * Queues `event`'s signature check, or answers `rate-limited:` when this connection already has
   * `maxPendingVerifications` waiting. Members' work goes first; a connection that has not
   * authenticated waits behind it. False when it was refused.
   */
  private verify(
    event: NostrEvent,
    raw: string,
    then: (result: VerifyResult) => void,
    member = this.isMemberConnection,
  ): boolean {
    const max = this.ctx.limits.maxPendingVerifications
    if (this.verifying >= max) {
      this.ok(
        event.id,
        false,
        `rate-limited: more than ${max} events awaiting verification on this connection; wait for OKs`,
      )
      return false
    }
    this.verifying++
    this.ctx.verifier.verify(event, raw, member ? 'member' : 'stranger').then(
      (result) => {
        this.verifying--
        then(result)
      },
      (err: unknown) => {
        this.verifying--
        this.ctx.log(`verify failed: ${String(err)}`)
        this.ok(event.id, false, 'error: could not verify the event; try again')
      },
    )
    return true
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
    const member = this.isMemberConnection
    if (!member) {
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
    this.verify(event, raw, (result) => this.afterVerify(event, raw, result), member)
  }

  private afterVerify(event: NostrEvent, raw: string, result: VerifyResult): void {
    if (result !== 'ok') {
      this.ok(event.id, false, `invalid: ${verifyMessages[result]}`)
      return
    }
    const ctx = this.ctx
    const now = ctx.now()
    let reservation: Reservation | undefined
    // The one admission rule hubs and nodes share (grants, channels); the hub adds its size,
    // rate and quota checks before anything changes.
    const admission = ctx.state.admit(event, now, {
      relayed: this.isPeerConnection(now),
      beforeChange: () => {
        checkEventPolicy(event, ctx.limits, now)
        reservation = ctx.eventLimits.take(event, raw, now, Date.now())
      },
    })
    if (!admission.ok) {
      if (reservation !== undefined) ctx.eventLimits.settle(reservation)
      this.ok(event.id, false, toNostrMessage(admission.error))
      return
    }
    // A revocation takes effect before it is stored, so no event slips in meanwhile.
    if (admission.revoked) ctx.enforce(event)
    if (!admission.store) {
      if (reservation !== undefined) ctx.eventLimits.settle(reservation)
      this.ok(event.id, true, admission.note)
      return
    }
    if (isEphemeralKind(event.kind)) {
      ctx.fanOut(raw, event)
      this.ok(event.id, true, '')
      return
    }
    ctx.commit.submit(event, raw, (outcome) => {
      if (reservation !== undefined) ctx.eventLimits.settle(reservation)
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

  /** Joins pairing room `pid` and gives this connection until the room's end to finish. */
  private joinLane(pid: string): string | undefined {
    const { lane } = this.ctx
    const refused = lane.join(
      this,
      pid,
      (party, subId, reason) => party.send(['CLOSED', subId, `restricted: ${reason}`]),
      addressGroup(this.socket.remoteAddress ?? ''),
    )
    if (refused !== undefined) return refused
    const until = lane.expiresAt(this)
    if (until !== undefined) this.ctx.admission.extend(this.socket, until)
    return undefined
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
    const refused = this.joinLane(pid)
    if (refused !== undefined) {
      this.ok(event.id, false, refused)
      return
    }
    const raw = JSON.stringify(event)
    this.verify(event, raw, (result) => {
      if (result !== 'ok') {
        this.ok(event.id, false, `invalid: ${verifyMessages[result]}`)
        return
      }
      lane.fanOut(pid, this, (to, subId) => to.sendRaw(`["EVENT",${JSON.stringify(subId)},${raw}]`))
      this.ok(event.id, true, '')
    })
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
    const refused = this.joinLane(pid) ?? this.ctx.lane.subscribe(this, pid, subId)
    if (refused !== undefined) {
      this.send(['CLOSED', subId, refused])
      return true
    }
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
    // A REQ under an open id replaces it (NIP-01): whatever the old one still had to send is
    // dropped, so re-sending a REQ never piles up work.
    this.cancel(subId)
    const closed = (reason: string) => {
      subs.delete(this, subId)
      this.send(['CLOSED', subId, reason])
    }
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
    // The live subscription starts now, before the first stored row is read: events accepted
    // while the stored part streams are held for it, so none is missed.
    subs.set(this, subId, filters)
    const stream = new StoredStream(this.ctx.store, filters, limits, () =>
      this.gate.hidden(this.ctx.now()),
    )
    this.jobs.push(new ReqJob(subId, stream))
    // The common small REQ is answered in this turn; a large one, or one queued behind another
    // of this connection, goes on in slices on later turns. What is sent in the turn frames are
    // read has one allowance a turn, hub-wide: REQ frames read together (one client's burst)
    // must not each take a full slice while everyone else's frames wait.
    if (this.jobs.length !== 1) return
    const { reqs } = this.ctx
    const left = reqs.inlineLeft()
    if (left <= 0) {
      reqs.add(this)
      return
    }
    const startedAt = performance.now()
    const outcome = this.runSlice(left)
    reqs.spentInline(performance.now() - startedAt)
    if (outcome === 'more') reqs.add(this)
  }

  /** NIP-77 NEG-OPEN: members only, over what they may read (the REQ's rules). */
  private onNegOpen(msg: unknown[]): void {
    const { limits } = this.ctx
    const [, subId, rawFilter, message] = msg
    if (typeof subId !== 'string' || subId.length === 0 || subId.length > limits.maxSubIdLength) {
      this.notice(
        `invalid: NEG-OPEN needs a subscription id of 1-${limits.maxSubIdLength} characters`,
      )
      return
    }
    if (!this.isMemberConnection) {
      this.send(['NEG-ERR', subId, 'auth-required: authenticate (NIP-42) as a fleet member first'])
      return
    }
    if (typeof message !== 'string') {
      this.send(['NEG-ERR', subId, 'invalid: NEG-OPEN takes a filter and a hex message'])
      return
    }
    let filter: Filter
    try {
      filter = parseFilter(rawFilter, {
        maxValues: limits.maxFilterValues,
        maxTagConditions: 8,
        maxTagValueLength: 1024,
      })
    } catch (err) {
      this.send(['NEG-ERR', subId, toNostrMessage(err)])
      return
    }
    this.neg.open(subId, filter, message)
  }

  /** Who pays for this connection's REQs: the person of its first member key. */
  private payer(): string {
    const now = this.ctx.now()
    for (const key of this.authed) {
      const person = this.personOfKey(key, now)
      if (person !== undefined) return person
    }
    return this.remote
  }

  /** A key's person; a hub key is its own, so a peer's work is not charged to the founder. */
  private personOfKey(key: string, now: number): string | undefined {
    const d = this.ctx.grants.isMember(key, now)
    if (d.ok && d.role === 'hub') return key
    return personOf(this.ctx.grants, key, now)
  }

  /** Sends a slice of the oldest streaming REQ (see ReqScheduler). */
  runSlice(sliceMs = this.ctx.limits.reqSliceMs): SliceOutcome {
    const job = this.jobs[0]
    if (job === undefined || this.ended) return 'idle'
    if (this.budgetWait !== undefined || this.drainWait !== undefined) return 'blocked'
    const { limits, reqWork } = this.ctx
    if (this.ws.bufferedAmount >= limits.reqHighWaterBytes) {
      this.waitForDrain()
      return 'blocked'
    }
    const payer = this.payer()
    const startedAt = performance.now()
    const wait = reqWork.wait(payer, Date.now())
    if (wait > 0) {
      // Out of budget: resume when it has refilled enough for a slice.
      this.budgetWait = setTimeout(() => {
        this.budgetWait = undefined
        if (!this.ended) this.ctx.reqs.add(this)
      }, wait)
      return 'blocked'
    }
    try {
      return this.slice(job, sliceMs)
    } finally {
      reqWork.charge(payer, performance.now() - startedAt, Date.now())
    }
  }

  private slice(job: ReqJob, sliceMs: number): SliceOutcome {
    const { limits } = this.ctx
    const prefix = `["EVENT",${JSON.stringify(job.subId)},`
    const startedAt = performance.now()
    let sent = 0
    let done: boolean
    try {
      done = job.stream.step(
        (row) => {
          this.heldBytes -= job.forget(row.id)
          this.sendRaw(`${prefix}${row.raw}]`)
          sent += row.raw.length
        },
        () =>
          !this.ended &&
          sent < limits.reqSliceBytes &&
          performance.now() - startedAt < sliceMs &&
          this.ws.bufferedAmount < limits.reqHighWaterBytes,
        () => this.flush(),
      )
    } catch (err) {
      this.ctx.log(`query failed: ${String(err)}`)
      this.finish(job)
      this.ctx.subs.delete(this, job.subId)
      this.send(['CLOSED', job.subId, 'error: query failed'])
      return this.jobs.length > 0 ? 'more' : 'idle'
    }
    if (this.ended) return 'idle'
    if (done) {
      this.finish(job)
      this.send(['EOSE', job.subId])
      for (const frame of job.held.values()) this.sendRaw(frame)
    }
    return this.jobs.length > 0 ? 'more' : 'idle'
  }

  private finish(job: ReqJob): void {
    const at = this.jobs.indexOf(job)
    if (at >= 0) this.jobs.splice(at, 1)
    this.heldBytes -= job.heldBytes
  }

  /** Stops streaming REQ `subId`, if it still is. */
  private cancel(subId: string): void {
    const job = this.jobs.find((j) => j.subId === subId)
    if (job === undefined) return
    this.finish(job)
    if (this.jobs.length > 0 && this.drainWait === undefined && this.budgetWait === undefined) {
      this.ctx.reqs.add(this)
    }
  }

  /**
   * The client has `reqHighWaterBytes` unread: resume when its socket drains, and close it if it
   * does not read for `slowReaderMs`.
   */
  private waitForDrain(): void {
    if (this.drainWait !== undefined) return
    const { slowReaderMs } = this.ctx.limits
    const onDrain = () => {
      clearTimeout(this.drainWait)
      this.drainWait = undefined
      if (!this.ended) this.ctx.reqs.add(this)
    }
    this.drainWait = setTimeout(() => {
      this.socket.off('drain', onDrain)
      this.drainWait = undefined
      this.closeSlow(`nothing read for ${slowReaderMs} ms while a REQ waits`)
    }, slowReaderMs)
    this.socket.once('drain', onDrain)
  }

  private onClose(subId: unknown): void {
    if (typeof subId !== 'string') {
      this.notice('invalid: CLOSE needs a subscription id')
      return
    }
    this.cancel(subId)
    this.ctx.subs.delete(this, subId)
    this.ctx.lane.unsubscribe(this, subId)
  }

  /**
   * NIP-42. What is cheap is checked first (attempts, challenge, relay URL, time, membership of
   * the key), so a stranger cannot make the hub check signatures; only then the signature.
   */
  private onAuth(value: unknown): void {
    const { limits } = this.ctx
    this.authAttempts++
    if (this.authAttempts > limits.maxAuthAttempts) {
      const id = (value as { id?: unknown } | null)?.id
      this.ok(
        typeof id === 'string' ? id : '',
        false,
        `rate-limited: more than ${limits.maxAuthAttempts} AUTH attempts on this connection`,
      )
      this.end()
      this.ws.close(1008, 'too many AUTH attempts')
      return
    }
    const event = this.parseOrRefuse(value)
    if (event === undefined) return
    const refusal = this.checkAuth(event)
    if (refusal !== undefined) {
      this.ok(event.id, false, refusal)
      return
    }
    // It names a member: while its signature is checked, strangers' arrivals cannot evict it.
    const queued = this.verify(event, JSON.stringify(event), (result) => {
      if (result !== 'ok') {
        this.ctx.admission.authenticating(this.socket, false)
        this.ok(event.id, false, `invalid: ${verifyMessages[result]}`)
        return
      }
      // Membership may have ended while the signature was checked.
      const again = this.checkAuth(event)
      if (again !== undefined) {
        this.ctx.admission.authenticating(this.socket, false)
        this.ok(event.id, false, again)
        return
      }
      if (this.countedAs === undefined) {
        // Its first member key: the connection counts toward that person's cap from now on.
        const person = this.personOfKey(event.pubkey, this.ctx.now()) ?? event.pubkey
        const { connections } = this.ctx.perPerson
        const held = connections.get(person) ?? 0
        const max = this.ctx.limits.maxConnectionsPerPerson
        if (held >= max) {
          this.ctx.admission.authenticating(this.socket, false)
          this.ok(
            event.id,
            false,
            `rate-limited: connections: this person holds ${held} connections (max_connections_per_person ${max}); close one`,
          )
          return
        }
        connections.set(person, held + 1)
        this.countedAs = person
      }
      this.authed.add(event.pubkey)
      this.ctx.admission.admit(this.socket)
      this.ok(event.id, true, '')
    })
    if (queued) this.ctx.admission.authenticating(this.socket, true)
  }

  /** Every AUTH check but the signature: the refusal, or undefined. */
  private checkAuth(event: NostrEvent): string | undefined {
    try {
      checkAuthEvent(event, {
        challenge: this.challenge,
        relayUrls: this.ctx.relayUrls,
        now: this.ctx.now(),
      })
      const d = this.ctx.grants.isMember(event.pubkey, this.ctx.now())
      if (!d.ok) throw new KithError('restricted', `${d.code}: ${d.reason}`)
      return undefined
    } catch (err) {
      return toNostrMessage(err)
    }
  }
}
