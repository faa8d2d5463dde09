import { laneRefusals } from '../pairing/protocol/lane-refusals.js'
/**
 * The hub's pairing lane (kith-pair/1): rooms keyed by pairing id where two parties exchange
 * kind-24140 events without authenticating. Two parties per room, one lane subscription per
 * connection, a 5-minute life, a few small events per connection, nothing stored; a third party
 * burns the room for both.
 */
export interface LaneLimits {
  roomTtlMs: number
  maxFrameBytes: number
  maxEventsPerConnection: number
  /**
   * Rooms remembered at once (waiting, used or burnt, each kept twice its life so a used code
   * stays used). Each costs a few hundred bytes; past this, new rooms are refused until old ones
   * expire, so a stranger minting pairing ids cannot grow the hub without bound.
   */
  maxRooms: number
  /**
   * Rooms one address (IPv6: one /64) may have opened and not yet forgotten: one stranger minting
   * pairing ids cannot take the whole of `maxRooms` from everyone else's pairings.
   */
  maxRoomsPerAddress: number
}

export const defaultLaneLimits: LaneLimits = {
  roomTtlMs: 5 * 60_000,
  maxFrameBytes: 4096,
  maxEventsPerConnection: 16,
  maxRooms: 10_000,
  maxRoomsPerAddress: 64,
}

interface Room<C> {
  createdAt: number
  /** The address group of the connection that opened it (counted against its share). */
  openedBy: string
  /** Parties that ever joined; a room admits two. */
  joined: number
  /** Parties still connected; a room whose two parties have both left was used. */
  active: Set<C>
  /** Each active party's one lane subscription id. */
  subs: Map<C, string>
  burnt?: string
}

/** A refusal with the NIP-01 prefix it goes out with: `restricted: pairing: …` or `rate-limited: pairing: …`. */
export type LaneRefusal = string

export class PairingLane<C> {
  /** In creation order (a Map keeps insertion order): expiry sweeps stop at the first live room. */
  private readonly rooms = new Map<string, Room<C>>()
  private readonly roomOf = new Map<C, string>()
  private readonly sent = new Map<C, number>()
  /** Rooms remembered, by the address that opened them. */
  private readonly roomsBy = new Map<string, number>()

  constructor(
    private readonly limits: LaneLimits = defaultLaneLimits,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /**
   * Admits `conn` into room `pid` (creating it), or says why not. A connection belongs to one
   * room; a third party burns the room, and `onBurn` tells the two parties.
   */
  join(
    conn: C,
    pid: string,
    onBurn: (party: C, subId: string, reason: string) => void,
    /** `conn`'s address group, charged if this opens the room. */
    address = '',
  ): LaneRefusal | undefined {
    const bound = this.roomOf.get(conn)
    if (bound !== undefined && bound !== pid) {
      return 'restricted: pairing: a connection serves one pairing only'
    }
    this.sweep()
    let room = this.rooms.get(pid)
    if (room === undefined) {
      if (this.rooms.size >= this.limits.maxRooms) {
        return 'rate-limited: pairing: too many pairings in progress on this hub; try again in a few minutes'
      }
      const opened = this.roomsBy.get(address) ?? 0
      if (opened >= this.limits.maxRoomsPerAddress) {
        return `rate-limited: pairing: more than ${this.limits.maxRoomsPerAddress} pairings in progress from this address; try again in a few minutes`
      }
      room = {
        createdAt: this.nowMs(),
        openedBy: address,
        joined: 0,
        active: new Set(),
        subs: new Map(),
      }
      this.rooms.set(pid, room)
      this.roomsBy.set(address, opened + 1)
    }
    if (room.burnt !== undefined) return `restricted: ${room.burnt}`
    if (this.nowMs() - room.createdAt > this.limits.roomTtlMs) {
      room.burnt = laneRefusals.expired
      return `restricted: ${room.burnt}`
    }
    if (room.active.has(conn)) return undefined
    if (room.joined >= 2 && room.active.size === 0) {
      room.burnt = laneRefusals.reused
      return `restricted: ${room.burnt}`
    }
    if (room.joined >= 2) {
      room.burnt = laneRefusals['third-party']
      for (const [party, subId] of room.subs) onBurn(party, subId, room.burnt)
      return `restricted: ${room.burnt}`
    }
    room.joined++
    room.active.add(conn)
    this.roomOf.set(conn, pid)
    return undefined
  }

  /**
   * Records `conn`'s lane subscription in the room it joined. One per connection: a pairing needs
   * one, and each subscription is a copy of every event relayed to it.
   */
  subscribe(conn: C, pid: string, subId: string): LaneRefusal | undefined {
    const room = this.rooms.get(pid)
    if (room === undefined || !room.active.has(conn)) return undefined
    const current = room.subs.get(conn)
    if (current !== undefined && current !== subId) {
      return 'restricted: pairing: one lane subscription per connection'
    }
    room.subs.set(conn, subId)
    return undefined
  }

  unsubscribe(conn: C, subId: string): boolean {
    const pid = this.roomOf.get(conn)
    const room = pid === undefined ? undefined : this.rooms.get(pid)
    if (room?.subs.get(conn) !== subId) return false
    return room.subs.delete(conn)
  }

  /** Counts an event from `conn`; false once it has sent its share. */
  take(conn: C): boolean {
    const n = (this.sent.get(conn) ?? 0) + 1
    this.sent.set(conn, n)
    return n <= this.limits.maxEventsPerConnection
  }

  /** Delivers to the other party's subscription. */
  fanOut(pid: string, from: C, deliver: (to: C, subId: string) => void): void {
    const room = this.rooms.get(pid)
    if (room === undefined || room.burnt !== undefined) return
    for (const [party, subId] of room.subs) if (party !== from) deliver(party, subId)
  }

  /** When the room `conn` joined stops serving it (ms since the epoch), if it joined one. */
  expiresAt(conn: C): number | undefined {
    const pid = this.roomOf.get(conn)
    const room = pid === undefined ? undefined : this.rooms.get(pid)
    return room === undefined ? undefined : room.createdAt + this.limits.roomTtlMs
  }

  /** Forgets `conn` entirely (it closed): nothing here keeps a closed connection alive. */
  drop(conn: C): void {
    this.sent.delete(conn)
    const pid = this.roomOf.get(conn)
    this.roomOf.delete(conn)
    if (pid === undefined) return
    const room = this.rooms.get(pid)
    if (room === undefined) return
    room.subs.delete(conn)
    room.active.delete(conn)
    // A room only one party ever joined, now empty, proves nothing about its code: free it.
    if (room.joined < 2 && room.active.size === 0 && room.burnt === undefined) {
      this.forget(pid, room)
    }
  }

  get maxFrameBytes(): number {
    return this.limits.maxFrameBytes
  }

  /** What the lane holds, for tests and operators. */
  stats(): { rooms: number; connections: number; addresses: number } {
    return {
      rooms: this.rooms.size,
      addresses: this.roomsBy.size,
      connections: new Set([...this.roomOf.keys(), ...this.sent.keys()]).size,
    }
  }

  /** Forgets rooms well past their life (burnt rooms are kept as long, so a pid stays burnt). */
  private sweep(): void {
    const cutoff = this.nowMs() - 2 * this.limits.roomTtlMs
    for (const [pid, room] of this.rooms) {
      if (room.createdAt >= cutoff) return
      this.forget(pid, room)
    }
  }

  private forget(pid: string, room: Room<C>): void {
    this.rooms.delete(pid)
    const n = (this.roomsBy.get(room.openedBy) ?? 1) - 1
    if (n > 0) this.roomsBy.set(room.openedBy, n)
    else this.roomsBy.delete(room.openedBy)
  }
}

/** The pairing id of a kind-24140 event or lane filter: one `d` tag of 32 hex characters. */
export function pairingIdOf(tags: readonly string[][]): string | undefined {
  const d = tags.filter((t) => t[0] === 'd')
  const pid = d.length === 1 ? d[0]![1] : undefined
  return pid !== undefined && /^[0-9a-f]{32}$/.test(pid) ? pid : undefined
}
