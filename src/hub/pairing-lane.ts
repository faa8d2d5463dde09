/**
 * The hub's pairing lane (kith-pair/1): rooms keyed by pairing id where two parties exchange
 * kind-24140 events without authenticating. Two parties per room, a 5-minute life, a few small
 * events per connection, nothing stored; a third party burns the room for both.
 */
export interface LaneLimits {
  roomTtlMs: number
  maxFrameBytes: number
  maxEventsPerConnection: number
}

export const defaultLaneLimits: LaneLimits = {
  roomTtlMs: 5 * 60_000,
  maxFrameBytes: 4096,
  maxEventsPerConnection: 16,
}

interface Room<C> {
  createdAt: number
  parties: Set<C>
  /** Parties still connected; a room whose two parties have both left was used. */
  active: Set<C>
  subs: Map<C, Set<string>>
  burnt?: string
}

export class PairingLane<C> {
  private readonly rooms = new Map<string, Room<C>>()
  private readonly roomOf = new Map<C, string>()
  private readonly sent = new Map<C, number>()

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
  ): string | undefined {
    const bound = this.roomOf.get(conn)
    if (bound !== undefined && bound !== pid) return 'pairing: a connection serves one pairing only'
    this.sweep()
    let room = this.rooms.get(pid)
    if (room === undefined) {
      room = { createdAt: this.nowMs(), parties: new Set(), active: new Set(), subs: new Map() }
      this.rooms.set(pid, room)
    }
    if (room.burnt !== undefined) return room.burnt
    if (this.nowMs() - room.createdAt > this.limits.roomTtlMs) {
      room.burnt = 'pairing: this code expired'
      return room.burnt
    }
    if (!room.parties.has(conn) && room.parties.size >= 2 && room.active.size === 0) {
      room.burnt = 'pairing: this code was already used'
      return room.burnt
    }
    if (!room.parties.has(conn) && room.parties.size >= 2) {
      room.burnt = 'pairing: another device tried to use this code; cancelled for safety'
      for (const [party, subIds] of room.subs)
        for (const subId of subIds) onBurn(party, subId, room.burnt)
      return room.burnt
    }
    room.parties.add(conn)
    room.active.add(conn)
    this.roomOf.set(conn, pid)
    return undefined
  }

  subscribe(conn: C, pid: string, subId: string): void {
    const room = this.rooms.get(pid)
    if (room === undefined) return
    const subs = room.subs.get(conn) ?? new Set()
    subs.add(subId)
    room.subs.set(conn, subs)
  }

  unsubscribe(conn: C, subId: string): boolean {
    const pid = this.roomOf.get(conn)
    const subs = pid === undefined ? undefined : this.rooms.get(pid)?.subs.get(conn)
    return subs?.delete(subId) ?? false
  }

  /** Counts an event from `conn`; false once it has sent its share. */
  take(conn: C): boolean {
    const n = (this.sent.get(conn) ?? 0) + 1
    this.sent.set(conn, n)
    return n <= this.limits.maxEventsPerConnection
  }

  /** Delivers to every subscription in the room except the sender's own. */
  fanOut(pid: string, from: C, deliver: (to: C, subId: string) => void): void {
    const room = this.rooms.get(pid)
    if (room === undefined || room.burnt !== undefined) return
    for (const [party, subIds] of room.subs) {
      if (party === from) continue
      for (const subId of subIds) deliver(party, subId)
    }
  }

  drop(conn: C): void {
    this.sent.delete(conn)
    const pid = this.roomOf.get(conn)
    this.roomOf.delete(conn)
    if (pid === undefined) return
    const room = this.rooms.get(pid)
    room?.subs.delete(conn)
    room?.active.delete(conn)
  }

  get maxFrameBytes(): number {
    return this.limits.maxFrameBytes
  }

  /** Forgets rooms well past their life (burnt rooms are kept as long, so a pid stays burnt). */
  private sweep(): void {
    const cutoff = this.nowMs() - 2 * this.limits.roomTtlMs
    for (const [pid, room] of this.rooms) if (room.createdAt < cutoff) this.rooms.delete(pid)
  }
}

/** The pairing id of a kind-24140 event or lane filter: one `d` tag of 32 hex characters. */
export function pairingIdOf(tags: readonly string[][]): string | undefined {
  const d = tags.filter((t) => t[0] === 'd')
  const pid = d.length === 1 ? d[0]![1] : undefined
  return pid !== undefined && /^[0-9a-f]{32}$/.test(pid) ? pid : undefined
}
