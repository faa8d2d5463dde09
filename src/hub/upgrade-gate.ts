import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { KithError } from '../errors.js'
import { checkConnectTicket, readConnectTicket } from '../events/connect-ticket.js'
import type { NostrEvent } from '../events/event.js'
import type { VerifyResult } from '../verify/result.js'
import { addressGroup } from './admission.js'
import { ConnectionRate } from './connection-rate.js'
import type { HubLimits } from './limits.js'

export interface UpgradeGateOptions {
  limits: Pick<
    HubLimits,
    | 'connectionsPerSecondPerAddress'
    | 'connectionBurstPerAddress'
    | 'connectionRateAddresses'
    | 'overRateAnswerDelayMs'
  >
  /** The URLs this hub answers for (a ticket's `u` names one). */
  relayUrls: ReadonlySet<string>
  isMember: (pubkey: string, now: number) => boolean
  verify: (event: NostrEvent) => Promise<VerifyResult>
  /** The connection is a member's (valid ticket): admission must not evict it for a cap. */
  vouch: (socket: Socket) => void
  /** The upgrade passed (ticket or token): admission places a socket it had deferred. */
  settle: (socket: Socket) => void
  now: () => number
  nowMs?: () => number
}

interface Late {
  retryAfter: number
  /** performance.now() when its 429 is due. */
  due: number
}

/** Over-rate upgrades that may wait for their 429 at once, hub-wide. */
const maxLateAnswers = 1024

/** How the gate decided: the outcome tests and the log see. */
export type UpgradeVerdict = 'ticket' | 'charged' | { retryAfter: number }

/**
 * The HTTP upgrade, before any WebSocket exists: a connection either carries a member's valid
 * connect ticket (not charged, and vouched for in admission) or takes a token of its address's
 * connection rate; without one it is answered `429 Too Many Requests` with Retry-After and
 * closed, having cost the hub a parse and no challenge, no socket state, no frames.
 *
 * A ticket is checked only when it is well formed, fresh, names this hub and a member's key; its
 * signature then goes to the verification pool like an AUTH's. A ticket that fails any check is
 * ignored (the connection is charged like any other): a member with a skewed clock still gets in
 * by the rate.
 */
export class UpgradeGate {
  private readonly rate: ConnectionRate
  /** Connections that took a token: given back if they authenticate as a member. */
  private readonly charged = new WeakMap<Duplex, string>()
  /**
   * Over-rate upgrades awaiting their 429, in arrival order, which is the order they are due (one
   * delay for all); each leaves when answered.
   */
  private readonly late = new Map<Duplex, Late>()
  private lateTimer: NodeJS.Timeout | undefined

  constructor(private readonly opts: UpgradeGateOptions) {
    this.rate = new ConnectionRate(
      {
        perSecond: opts.limits.connectionsPerSecondPerAddress,
        burst: opts.limits.connectionBurstPerAddress,
        maxAddresses: opts.limits.connectionRateAddresses,
      },
      opts.nowMs,
    )
  }

  /** Decides on an upgrade; a refused one has already been answered 429 and closed. */
  async decide(req: IncomingMessage, socket: Duplex): Promise<UpgradeVerdict> {
    if (await this.ticketValid(req)) {
      this.opts.vouch(socket as Socket)
      this.opts.settle(socket as Socket)
      return 'ticket'
    }
    const address = addressGroup(req.socket.remoteAddress ?? '')
    const retryAfter = this.rate.take(address)
    if (retryAfter === undefined) {
      this.charged.set(socket, address)
      this.opts.settle(socket as Socket)
      return 'charged'
    }
    this.refuseLater(socket, retryAfter)
    return { retryAfter }
  }

  /** Answers every upgrade still waiting for its 429 now (the hub is stopping). */
  answerAll(): void {
    clearTimeout(this.lateTimer)
    this.lateTimer = undefined
    for (const socket of this.late.keys()) this.answerNow(socket)
  }

  /**
   * Answers `socket`'s 429 now if it is waiting for it (admission displaces it: the client hears
   * why rather than a reset). False when it is not waiting.
   */
  answerNow(socket: Duplex): boolean {
    const entry = this.late.get(socket)
    if (entry === undefined) return false
    this.late.delete(socket)
    refuse(socket, entry.retryAfter)
    return true
  }

  private refuseLater(socket: Duplex, retryAfter: number): void {
    const delay = Math.min(this.opts.limits.overRateAnswerDelayMs, retryAfter * 1000)
    // Past this many waiting, a flood is answered at once: what waits is bounded too.
    if (delay <= 0 || this.late.size >= maxLateAnswers) {
      refuse(socket, retryAfter)
      return
    }
    // Real time, whatever clock the rate is given (tests give it their own).
    this.late.set(socket, { retryAfter, due: performance.now() + delay })
    if (this.lateTimer === undefined) this.armLate()
  }

  private armLate(): void {
    const head = this.late.values().next().value
    if (head === undefined) return
    this.lateTimer = setTimeout(
      () => {
        this.lateTimer = undefined
        const now = performance.now()
        for (const [socket, { due }] of this.late) {
          if (due > now) break
          this.answerNow(socket)
        }
        this.armLate()
      },
      Math.max(0, head.due - performance.now()),
    )
    this.lateTimer.unref()
  }

  /** `socket` authenticated as a member: its address gets its token back. */
  refund(socket: Duplex): void {
    const address = this.charged.get(socket)
    if (address === undefined) return
    this.charged.delete(socket)
    this.rate.refund(address)
  }

  /** Whether `address` (an address group) has no token now: its next upgrade would be refused. */
  overRate(address: string): boolean {
    return this.rate.empty(address)
  }

  /** Addresses the rate tracks now, for tests and operators. */
  get addresses(): number {
    return this.rate.size
  }

  private async ticketValid(req: IncomingMessage): Promise<boolean> {
    let ticket: NostrEvent | undefined
    try {
      ticket = readConnectTicket(req.url ?? '/')
      if (ticket === undefined) return false
      checkConnectTicket(ticket, { relayUrls: this.opts.relayUrls, now: this.opts.now() })
    } catch (err) {
      // A malformed, stale or misdirected ticket is no ticket: the connection pays the rate.
      if (err instanceof KithError) return false
      throw err
    }
    if (!this.opts.isMember(ticket.pubkey, this.opts.now())) return false
    return (await this.opts.verify(ticket)) === 'ok'
  }
}

/**
 * Answers an over-rate upgrade and closes the socket once the answer is written (a socket closed
 * meanwhile, by its client or by admission, is only destroyed).
 */
function refuse(socket: Duplex, retryAfter: number): void {
  if (!socket.writable) {
    socket.destroy()
    return
  }
  socket.once('finish', () => socket.destroy())
  socket.end(tooManyResponse(retryAfter))
}

/**
 * The 429 answer for each Retry-After, made once: a flood of over-rate upgrades is answered
 * thousands of times a second, each with the same bytes.
 */
const tooManyResponses = new Map<number, Buffer>()
function tooManyResponse(retryAfter: number): Buffer {
  let response = tooManyResponses.get(retryAfter)
  if (response === undefined) {
    const body = `rate-limited: more than the connections per second this address may open; retry in ${retryAfter} s\n`
    response = Buffer.from(
      'HTTP/1.1 429 Too Many Requests\r\n' +
        `Retry-After: ${retryAfter}\r\n` +
        'Content-Type: text/plain; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    )
    // Retry-After is a few seconds at most; bound the cache anyway.
    if (tooManyResponses.size < 64) tooManyResponses.set(retryAfter, response)
  }
  return response
}
