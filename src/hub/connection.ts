import { randomBytes } from 'node:crypto'
import type { Socket } from 'node:net'
import type { WebSocket } from 'ws'
import { toNostrMessage } from '../errors.js'
import { parseEvent, type NostrEvent } from '../events/event.js'
import { personOf } from '../grants/members.js'
import type { VerifyResult } from '../verify/result.js'
import { ChannelGate } from './channel-gate.js'
import { ConnOutput } from './conn-output.js'
import type { HubContext } from './context.js'
import { NegReconciliations } from './negentropy.js'
import { onAuth } from './on-auth.js'
import { onEvent } from './on-event.js'
import { onNegClose, onNegMessage, onNegOpen } from './on-neg.js'
import { onClose, onReq } from './on-req.js'
import { firstRefusal, rejectFrame } from './refusals.js'
import { strangerName, type SliceOutcome, type Streaming } from './req-scheduler.js'
import { ReqStreams } from './req-streams.js'

/** Best effort: the id of an event inside a frame we will not parse, so OK can name it. */
function sniffEventId(text: string): string {
  return /"id"\s*:\s*"([0-9a-f]{64})"/.exec(text)?.[1] ?? ''
}

/**
 * One client connection: its NIP-42 state, what it has sent and owes, and the dispatch of its
 * frames to one module per verb (on-event.ts, on-pairing.ts, on-req.ts, on-auth.ts, on-neg.ts),
 * whose refusals are the lists of refusals.ts. Output and backpressure are `output`
 * (conn-output.ts), the stored parts of REQs `streams` (req-streams.ts), NIP-77 `neg`.
 */
export class Connection implements Streaming {
  readonly challenge = randomBytes(16).toString('hex')
  /** Keys this connection has proven, in AUTH order. */
  readonly authed = new Set<string>()
  alive = true
  /** What it may read of private channels. */
  readonly gate: ChannelGate
  readonly output: ConnOutput
  readonly streams: ReqStreams
  /** Its NIP-77 reconciliations, made on first use (`neg`): most connections never open one. */
  private negs: NegReconciliations | undefined
  /** The person whose connection cap this connection counts toward, once a member. */
  countedAs: string | undefined
  /** AUTH frames received, successful or not. */
  authAttempts = 0
  /** This connection's events and AUTHs waiting for their signature check. */
  verifying = 0
  private done = false
  /** Set while the hub reads nothing from this connection (its person is past their budget). */
  private readPause: NodeJS.Timeout | undefined
  /** Frames read while paused, made on the first pause (most connections never pause). */
  private heldFrames: Buffer[] | undefined

  constructor(
    readonly ws: WebSocket,
    readonly ctx: HubContext<Connection>,
    /** The TCP/TLS socket under `ws`: writes are coalesced on it and its drain resumes REQs. */
    readonly socket: Socket,
  ) {
    this.gate = new ChannelGate(ctx.channels, this.authed)
    this.output = new ConnOutput(ws, socket, ctx.limits.maxUnreadBytes, this)
    this.streams = new ReqStreams(this)
    this.send(['AUTH', this.challenge])
  }

  /** This connection's NIP-77 reconciliations (made here, on the first NEG- frame). */
  get neg(): NegReconciliations {
    this.negs ??= new NegReconciliations(
      this.ctx.store,
      this.ctx.limits,
      {
        send: (frame) => this.send(frame),
        hidden: () => this.gate.hidden(this.ctx.now()),
        payer: () => this.payer(),
      },
      {
        work: this.ctx.reqWork,
        open: this.ctx.perPerson.negOpen,
        maxOpenPerPerson: this.ctx.limits.negMaxOpenPerPerson,
        turns: this.ctx.negTurns,
      },
    )
    return this.negs
  }

  /**
   * The client's address and port, for logs and as a stranger's payer. Made when asked, not
   * kept: a string per connection held for the odd log line (the socket caches its peer name
   * from admission on, so it is there after the socket closes).
   */
  get remote(): string {
    return `${this.socket.remoteAddress}:${this.socket.remotePort}`
  }

  /** True once the connection has closed or is closing: it does no more work. */
  get ended(): boolean {
    return this.done
  }

  send(message: unknown[]): void {
    this.output.send(message)
  }

  sendRaw(frame: string): void {
    this.output.sendRaw(frame)
  }

  ok(id: string, accepted: boolean, message: string): void {
    this.send(['OK', id, accepted, message])
  }

  notice(message: string): void {
    this.send(['NOTICE', message])
  }

  /** Cuts a client that does not read: a close frame could not reach it through the backlog. */
  closeSlow(why: string): void {
    if (this.done) return
    this.ctx.log(`closing slow reader ${this.remote}: ${why}`)
    this.end()
    this.ws.terminate()
  }

  /** Forgets the connection's work (it closed or is closing). */
  end(): void {
    if (this.done) return
    this.done = true
    clearTimeout(this.readPause)
    this.heldFrames = undefined
    this.output.ended = true
    this.streams.end()
    this.negs?.closeAll()
    if (this.countedAs !== undefined) {
      const { connections } = this.ctx.perPerson
      const n = (connections.get(this.countedAs) ?? 1) - 1
      if (n <= 0) connections.delete(this.countedAs)
      else connections.set(this.countedAs, n)
      this.countedAs = undefined
    }
  }

  /** True while at least one key this connection proved is a member now. */
  get isMemberConnection(): boolean {
    const now = this.ctx.now()
    for (const key of this.authed) if (this.ctx.grants.isMember(key, now).ok) return true
    return false
  }

  /** True when every member key this connection proved is a hub key: a peer hub relaying. */
  isPeerConnection(now: number): boolean {
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
    this.streams.deliver(subId, id, frame)
  }

  /** Sends a slice of the oldest streaming REQ (see ReqScheduler). */
  runSlice(): SliceOutcome {
    return this.streams.runSlice()
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

  /**
   * One frame from the client, and its main-thread time charged to the person's work budget (a
   * member's, EVENTs aside; what a REQ's inline slice cost is charged once, by the slice): past it, the hub
   * stops reading the connection until it has refilled, so one person's frames (a REQ re-sent
   * every few milliseconds, each parsed and set up) cost the others no more than the budget.
   */
  handle(data: Buffer): void {
    if (this.readPause !== undefined) {
      // ws hands over every frame of a chunk already read, paused or not: those wait here
      // (at most that chunk; the socket itself is paused).
      this.alive = true
      ;(this.heldFrames ??= []).push(data)
      return
    }
    const startedAt = performance.now()
    const slicesBefore = this.streams.chargedMs
    const { reqWork } = this.ctx
    // Any frame, a stranger's or an EVENT, is someone using the hub: no one else's work is lent
    // time past their budget for a while (WorkBudget).
    reqWork.seen(this.authed.size === 0 ? strangerName : this.payer(), Date.now())
    const verb = this.dispatch(data)
    // EVENTs have their own rates and quotas (event-limits.ts); charging them here too would
    // slow a busy publisher's queries for what its events already paid.
    if (this.authed.size === 0 || this.done || verb === 'EVENT') return
    const payer = this.payer()
    const nowMs = Date.now()
    reqWork.charge(
      payer,
      performance.now() - startedAt - (this.streams.chargedMs - slicesBefore),
      nowMs,
    )
    const wait = reqWork.wait(payer, nowMs)
    if (wait > 0) this.pauseReading(wait)
  }

  /** Reads nothing more from the client for `ms` (its frames wait in the socket meanwhile). */
  private pauseReading(ms: number): void {
    if (this.readPause !== undefined) return
    this.ws.pause()
    this.readPause = setTimeout(() => {
      this.readPause = undefined
      while (!this.done && this.readPause === undefined && this.heldFrames?.length) {
        this.handle(this.heldFrames.shift()!)
      }
      if (!this.done && this.readPause === undefined) this.ws.resume()
    }, ms)
  }

  /** Checked (refusals.ts rejectFrame), parsed, handed to its verb; returns the verb, once parsed. */
  private dispatch(data: Buffer): string | undefined {
    this.alive = true
    if (this.done) return
    const text = data.toString('utf8')
    const tooLarge = firstRefusal(rejectFrame, { bytes: data.length, limits: this.ctx.limits })
    if (tooLarge !== undefined) {
      if (text.startsWith('["EVENT"')) this.ok(sniffEventId(text), false, tooLarge)
      else this.notice(tooLarge)
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
    this.route(msg, data.length)
    return msg[0]
  }

  private route(msg: unknown[], frameBytes: number): void {
    switch (msg[0]) {
      case 'EVENT':
        onEvent(this, msg[1], frameBytes)
        return
      case 'REQ':
        onReq(this, msg)
        return
      case 'CLOSE':
        onClose(this, msg[1])
        return
      case 'AUTH':
        onAuth(this, msg[1])
        return
      case 'NEG-OPEN':
        onNegOpen(this, msg)
        return
      case 'NEG-MSG':
        onNegMessage(this, msg)
        return
      case 'NEG-CLOSE':
        onNegClose(this, msg)
        return
      default:
        this.notice(`invalid: unknown verb ${JSON.stringify(msg[0]).slice(0, 40)}`)
    }
  }

  /** The event in an EVENT or AUTH frame, or undefined after answering OK false. */
  parseOrRefuse(value: unknown): NostrEvent | undefined {
    try {
      return parseEvent(value)
    } catch (err) {
      const id = (value as { id?: unknown } | null)?.id
      this.ok(typeof id === 'string' ? id : '', false, toNostrMessage(err))
      return undefined
    }
  }

  /**
   * Queues `event`'s signature check (its list has checked there is room: refusals.ts
   * verifyQueueFull). Members' work goes first; a connection that has not authenticated waits
   * behind it.
   */
  verify(
    event: NostrEvent,
    raw: string,
    then: (result: VerifyResult) => void,
    member = this.isMemberConnection,
  ): void {
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
  }

  /** Who pays for this connection's REQs and reconciliations: the person of its first member key. */
  payer(): string {
    const now = this.ctx.now()
    for (const key of this.authed) {
      const person = this.personOfKey(key, now)
      if (person !== undefined) return person
    }
    return this.remote
  }

  /** A key's person; a hub key is its own, so a peer's work is not charged to the founder. */
  personOfKey(key: string, now: number): string | undefined {
    const d = this.ctx.grants.isMember(key, now)
    if (d.ok && d.role === 'hub') return key
    return personOf(this.ctx.grants, key, now)
  }
}
