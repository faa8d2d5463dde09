import { isIPv6, type Socket } from 'node:net'
import { laneRefusals } from '../pairing/protocol/lane-refusals.js'
import { admissionLogEveryMs, type HubLimits } from './limits.js'

type AdmissionLimits = Pick<
  HubLimits,
  'authDeadlineMs' | 'maxUnauthenticated' | 'maxUnauthenticatedPerAddress'
>

interface Waiting {
  key: string
  /** Arrival order, hub-wide. */
  arrived: number
  socket: Socket
  address: string
  timer: NodeJS.Timeout
  /** Its AUTH names a member and its signature is being checked: never evicted meanwhile. */
  authenticating: boolean
  /** In a pairing room: its deadline is the room's end (nothing more; it is evicted like any). */
  lane: boolean
  /**
   * It carried a member's connect ticket (upgrade-gate.ts): never evicted, like one mid-AUTH, so
   * strangers from its address cannot push it out before it authenticates. It keeps its deadline.
   */
  vouched: boolean
  /** Arrived while its address was past its connection rate: displaces no one yet (`settle`). */
  deferred: boolean
  /** Closes the WebSocket with a reason once there is one; before the upgrade, the socket goes. */
  close?: (code: number, reason: string) => void
  /** Its socket's 'close' listener, removed when it leaves: an admitted member's socket keeps none. */
  onClose: () => void
}

const tooMany = 'try again later: too many unauthenticated connections'

/**
 * Who may hold a socket before proving membership. Every TCP connection starts here and leaves
 * when it authenticates as a member (or closes). Strangers are bounded three ways: a deadline to
 * authenticate, a cap per address, and a cap for all of them together.
 *
 * A newcomer is never refused for a cap: it displaces a stranger instead, the oldest of its own
 * address when that address is full, else the oldest of whichever address holds the most. A
 * connection whose AUTH is being checked is never the one displaced. So a member, which answers
 * the challenge within a round trip, is displaced only if its own address opens a full
 * address's worth of connections in that round trip; strangers elsewhere, however many and
 * however they re-open, displace one another. A pairing room extends a stranger's deadline but
 * does not protect it: strangers cannot fill the room with connections cheaper to keep than a
 * member's. A connection whose upgrade carried a member's connect ticket is protected like one
 * mid-AUTH; one arriving from an address past its connection rate displaces no one until the
 * upgrade gate lets it through (most are answered 429 and never do).
 */
export class Admission {
  /** Every stranger, by socket key. */
  private readonly waiting = new Map<string, Waiting>()
  /** Strangers by address group, each in arrival order (a Map keeps insertion order). */
  private readonly byAddress = new Map<string, Map<string, Waiting>>()
  private arrivals = 0
  /** Sockets arrived past their address's connection rate, awaiting the upgrade gate. */
  private readonly deferredBy = new Map<string, number>()
  private deferredTotal = 0
  private refusedSinceLog = 0
  private lastLogAt = 0

  constructor(
    private readonly limits: AdmissionLimits,
    private readonly log: (line: string) => void,
    private readonly hooks: {
      /** Told when a stranger authenticates as a member (the connection rate refunds it). */
      onAdmit?: (socket: Socket) => void
      /** Whether an address is past its connection rate now (connection-rate.ts). */
      overRate?: (address: string) => boolean
      /**
       * A socket displaced before its upgrade: true when the upgrade gate answers it (its 429
       * was waiting; upgrade-gate.ts), else it is destroyed.
       */
      answerNow?: (socket: Socket) => boolean
    } = {},
  ) {}

  /** A new TCP connection. False when it was refused (and destroyed). */
  arrive(socket: Socket): boolean {
    const key = socketKey(socket)
    const address = addressGroup(socket.remoteAddress ?? '')
    // From an address past its connection rate, this socket's upgrade will most likely be
    // answered 429: it displaces no one until the upgrade gate lets it through (`settle`), so a
    // flood of refused upgrades does not churn the strangers (or the member) already held. Such
    // sockets are bounded too: per address as strangers are, and in all; past that, placed as usual.
    const deferred =
      this.hooks.overRate?.(address) === true && this.deferredTotal < this.limits.maxUnauthenticated
    if (deferred) {
      if ((this.deferredBy.get(address) ?? 0) >= this.limits.maxUnauthenticatedPerAddress) {
        const own = this.byAddress.get(address)
        const victim = own === undefined ? undefined : oldestDeferred(own)
        if (victim !== undefined) this.expel(victim.key, 1013, tooMany)
      }
    } else if (!this.makeRoom(address, 0)) {
      return this.refuse(socket, address)
    }
    const entry: Waiting = {
      key,
      arrived: this.arrivals++,
      socket,
      address,
      authenticating: false,
      lane: false,
      vouched: false,
      deferred,
      onClose: () => this.leave(key),
      timer: setTimeout(
        () =>
          this.expel(
            key,
            1008,
            `auth-required: authenticate within ${this.limits.authDeadlineMs / 1000} s`,
          ),
        this.limits.authDeadlineMs,
      ),
    }
    entry.timer.unref()
    this.waiting.set(key, entry)
    let group = this.byAddress.get(address)
    if (group === undefined) this.byAddress.set(address, (group = new Map<string, Waiting>()))
    group.set(key, entry)
    if (deferred) this.countDeferred(address, 1)
    socket.once('close', entry.onClose)
    return true
  }

  /**
   * The upgrade gate let `socket` through (a token, or a member's ticket): if it arrived deferred,
   * it now takes its place like any newcomer, displacing its address's oldest stranger (or the
   * largest address's) when a cap is reached. If no one can be displaced, it is closed.
   */
  settle(socket: Socket): void {
    const entry = this.waiting.get(socketKey(socket))
    if (entry === undefined || !entry.deferred) return
    entry.deferred = false
    this.countDeferred(entry.address, -1)
    if (!this.makeRoom(entry.address, 1)) this.expel(entry.key, 1013, tooMany)
  }

  /**
   * Displaces a stranger if the address or the hub is at its cap (deferred sockets and `self`
   * of the settling socket not counted). False when every candidate is protected.
   */
  private makeRoom(address: string, self: number): boolean {
    const own = this.byAddress.get(address)
    const ownCount = (own?.size ?? 0) - (this.deferredBy.get(address) ?? 0) - self
    if (ownCount >= this.limits.maxUnauthenticatedPerAddress) {
      const victim = own === undefined ? undefined : oldestEvictable(own)
      if (victim === undefined) return false
      this.refused(
        `${address}: more than ${this.limits.maxUnauthenticatedPerAddress} unauthenticated connections: closing its oldest`,
      )
      this.expel(victim.key, 1013, tooMany)
    } else if (this.waiting.size - this.deferredTotal - self >= this.limits.maxUnauthenticated) {
      const victim = this.evictionCandidate()
      if (victim === undefined) return false
      this.refused(
        'too many unauthenticated connections: closing the oldest of the largest address',
      )
      this.expel(victim.key, 1013, tooMany)
    }
    return true
  }

  private countDeferred(address: string, by: 1 | -1): void {
    this.deferredTotal += by
    const n = (this.deferredBy.get(address) ?? 0) + by
    if (n > 0) this.deferredBy.set(address, n)
    else this.deferredBy.delete(address)
  }

  /** The WebSocket over `socket` exists: deadlines and evictions close it with a reason. */
  attach(socket: Socket, close: (code: number, reason: string) => void): void {
    const entry = this.waiting.get(socketKey(socket))
    if (entry !== undefined) entry.close = close
  }

  /**
   * `socket` sent an AUTH naming a member and its signature is being checked (true), or that
   * check ended without admitting it (false). Only a member's key gets here, at most
   * `maxAuthAttempts` times per connection, so strangers cannot shelter behind it.
   */
  authenticating(socket: Socket, checking: boolean): void {
    const entry = this.waiting.get(socketKey(socket))
    if (entry !== undefined) entry.authenticating = checking
  }

  /** `socket` authenticated as a member: it no longer counts as a stranger. */
  admit(socket: Socket): void {
    if (!this.waiting.has(socketKey(socket))) return
    this.leave(socketKey(socket))
    this.hooks.onAdmit?.(socket)
  }

  /** `socket`'s upgrade carried a member's valid connect ticket: it is not evicted for a cap. */
  vouch(socket: Socket): void {
    const entry = this.waiting.get(socketKey(socket))
    if (entry !== undefined) entry.vouched = true
  }

  /** `socket` joined a pairing room: its deadline becomes the room's end. */
  extend(socket: Socket, untilMs: number): void {
    const key = socketKey(socket)
    const entry = this.waiting.get(key)
    if (entry === undefined || entry.lane) return
    entry.lane = true
    clearTimeout(entry.timer)
    entry.timer = setTimeout(
      () => this.expel(key, 1008, `restricted: ${laneRefusals.expired}`),
      Math.max(0, untilMs - Date.now()),
    )
    entry.timer.unref()
  }

  /** Strangers held now, for tests and operators. */
  get size(): number {
    return this.waiting.size
  }

  /** The oldest evictable stranger of the address holding the most (at most 256 looked at). */
  private evictionCandidate(): Waiting | undefined {
    let best: Waiting | undefined
    let bestSize = 0
    for (const group of this.byAddress.values()) {
      if (group.size < bestSize) continue
      const victim = oldestEvictable(group)
      if (victim === undefined) continue
      // Ties go to the older stranger: the newest arrivals (members among them) stay longest.
      if (group.size > bestSize || (best !== undefined && victim.arrived < best.arrived)) {
        best = victim
        bestSize = group.size
      }
    }
    return best
  }

  /** Every stranger of the address is mid-AUTH (or the hub is): the newcomer waits its turn. */
  private refuse(socket: Socket, address: string): false {
    this.refused(`${address}: every unauthenticated connection is authenticating; refused`)
    socket.destroy()
    return false
  }

  private expel(key: string, code: number, reason: string): void {
    const entry = this.waiting.get(key)
    if (entry === undefined) return
    this.leave(key)
    if (entry.close !== undefined) entry.close(code, reason)
    else if (this.hooks.answerNow?.(entry.socket) !== true) entry.socket.destroy()
  }

  private leave(key: string): void {
    const entry = this.waiting.get(key)
    if (entry === undefined) return
    clearTimeout(entry.timer)
    entry.socket.off('close', entry.onClose)
    this.waiting.delete(key)
    if (entry.deferred) this.countDeferred(entry.address, -1)
    const group = this.byAddress.get(entry.address)
    group?.delete(key)
    if (group?.size === 0) this.byAddress.delete(entry.address)
  }

  /** One log line per admissionLogEveryMs at most: a flood of strangers must not flood the log as well. */
  private refused(what: string): void {
    this.refusedSinceLog++
    const now = Date.now()
    if (now - this.lastLogAt < admissionLogEveryMs) return
    this.log(`admission: ${what} (${this.refusedSinceLog} refused or closed since the last line)`)
    this.lastLogAt = now
    this.refusedSinceLog = 0
  }
}

/** The first (oldest) stranger of `group` neither mid-AUTH nor vouched for by a ticket. */
function oldestEvictable(group: Map<string, Waiting>): Waiting | undefined {
  for (const entry of group.values()) {
    if (!entry.authenticating && !entry.vouched && !entry.deferred) return entry
  }
  return undefined
}

/** The first (oldest) deferred socket of `group`. */
function oldestDeferred(group: Map<string, Waiting>): Waiting | undefined {
  for (const entry of group.values()) if (entry.deferred) return entry
  return undefined
}

/** A connection's identity in both its TCP and its TLS socket. */
function socketKey(socket: Socket): string {
  return `${socket.remoteAddress ?? ''}|${socket.remotePort ?? ''}`
}

/** The address a per-address cap counts by: IPv4 as is, IPv6 by its /64 (one subscriber's). */
export function addressGroup(address: string): string {
  // Most connections are IPv4: every connection asks this, before the pattern and parse below.
  if (!address.includes(':')) return address
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped) return mapped[1]!
  if (!isIPv6(address)) return address
  const [head = '', tail = ''] = address.split('::')
  const left = head === '' ? [] : head.split(':')
  const right = tail === '' ? [] : tail.split(':')
  const groups = address.includes('::')
    ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
    : left
  return `${groups
    .slice(0, 4)
    .map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`
}
