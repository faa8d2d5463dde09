import { isIPv6, type Socket } from 'node:net'
import { laneRefusals } from '../pairing/protocol/lane-refusals.js'
import { admissionLogEveryMs, type HubLimits } from './limits.js'

type AdmissionLimits = Pick<
  HubLimits,
  'authDeadlineMs' | 'maxUnauthenticated' | 'maxUnauthenticatedPerAddress'
>

interface Waiting {
  socket: Socket
  address: string
  timer: NodeJS.Timeout
  /** In a pairing room: evicted only when no other stranger is left to evict. */
  lane: boolean
  /** Closes the WebSocket with a reason once there is one; before the upgrade, the socket goes. */
  close?: (code: number, reason: string) => void
}

/**
 * Who may hold a socket before proving membership. Every TCP connection starts here and leaves
 * when it authenticates as a member (or closes). Strangers are bounded three ways: a deadline to
 * authenticate, a cap per address, and a cap for all of them together, past which a newcomer
 * displaces the oldest stranger; so however many strangers come, they hold at most
 * `maxUnauthenticated` sockets and the rest of the process's file descriptors are left to
 * members, who authenticate within milliseconds of connecting.
 */
export class Admission {
  /** In arrival order (a Map keeps insertion order): the first is the oldest stranger. */
  private readonly waiting = new Map<string, Waiting>()
  private readonly perAddress = new Map<string, number>()
  private refusedSinceLog = 0
  private lastLogAt = 0

  constructor(
    private readonly limits: AdmissionLimits,
    private readonly log: (line: string) => void,
  ) {}

  /** A new TCP connection. False when it was refused (and destroyed). */
  arrive(socket: Socket): boolean {
    const key = socketKey(socket)
    const address = addressGroup(socket.remoteAddress ?? '')
    if ((this.perAddress.get(address) ?? 0) >= this.limits.maxUnauthenticatedPerAddress) {
      this.refused(
        `${address}: more than ${this.limits.maxUnauthenticatedPerAddress} unauthenticated connections`,
      )
      socket.destroy()
      return false
    }
    if (this.waiting.size >= this.limits.maxUnauthenticated) this.evictOne()
    const entry: Waiting = {
      socket,
      address,
      lane: false,
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
    this.perAddress.set(address, (this.perAddress.get(address) ?? 0) + 1)
    socket.once('close', () => this.leave(key))
    return true
  }

  /** The WebSocket over `socket` exists: deadlines and evictions close it with a reason. */
  attach(socket: Socket, close: (code: number, reason: string) => void): void {
    const entry = this.waiting.get(socketKey(socket))
    if (entry !== undefined) entry.close = close
  }

  /** `socket` authenticated as a member: it no longer counts as a stranger. */
  admit(socket: Socket): void {
    this.leave(socketKey(socket))
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

  private evictOne(): void {
    let victim: string | undefined
    for (const [key, entry] of this.waiting) {
      victim ??= key
      if (!entry.lane) {
        victim = key
        break
      }
    }
    if (victim !== undefined) {
      this.refused('too many unauthenticated connections: closing the oldest')
      this.expel(victim, 1013, 'try again later: too many unauthenticated connections')
    }
  }

  private expel(key: string, code: number, reason: string): void {
    const entry = this.waiting.get(key)
    if (entry === undefined) return
    this.leave(key)
    if (entry.close !== undefined) entry.close(code, reason)
    else entry.socket.destroy()
  }

  private leave(key: string): void {
    const entry = this.waiting.get(key)
    if (entry === undefined) return
    clearTimeout(entry.timer)
    this.waiting.delete(key)
    const n = (this.perAddress.get(entry.address) ?? 1) - 1
    if (n <= 0) this.perAddress.delete(entry.address)
    else this.perAddress.set(entry.address, n)
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

/** A connection's identity in both its TCP and its TLS socket. */
function socketKey(socket: Socket): string {
  return `${socket.remoteAddress ?? ''}|${socket.remotePort ?? ''}`
}

/** The address a per-address cap counts by: IPv4 as is, IPv6 by its /64 (one subscriber's). */
export function addressGroup(address: string): string {
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
