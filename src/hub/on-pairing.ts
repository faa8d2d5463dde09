import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { addressGroup } from './admission.js'
import type { Connection } from './connection.js'
import { pairingIdOf } from './pairing-lane.js'
import {
  firstRefusal,
  rejectLaneSubscription,
  rejectPairingEvent,
  signatureRefusal,
  type Refusal,
} from './refusals.js'

/**
 * The pairing lane (kith-pair): kind 24140 for one pairing id, with or without AUTH. Never
 * stored; relayed only to the other party's lane subscription.
 */
export function onPairingEvent(conn: Connection, event: NostrEvent, frameBytes: number): void {
  const { lane, limits } = conn.ctx
  const pid = pairingIdOf(event.tags)
  const refused = firstRefusal(rejectPairingEvent, {
    pid,
    frameBytes,
    maxFrameBytes: lane.maxFrameBytes,
    takeEvent: () => lane.take(conn),
    join: (p) => joinLane(conn, p),
    verifying: conn.verifying,
    limits,
  })
  // (noPairingId refuses an event without a pairing id: `pid` is one past this point.)
  if (refused !== undefined || pid === undefined) {
    conn.ok(event.id, false, refused ?? 'invalid: no pairing id')
    return
  }
  const raw = JSON.stringify(event)
  conn.verify(event, raw, (result) => {
    if (result !== 'ok') {
      conn.ok(event.id, false, signatureRefusal(result))
      return
    }
    lane.fanOut(pid, conn, (to, subId) => to.sendRaw(`["EVENT",${JSON.stringify(subId)},${raw}]`))
    conn.ok(event.id, true, '')
  })
}

/**
 * A REQ that is exactly {kinds:[24140], "#d":[pid]} is a pairing-lane subscription: true when it
 * was one (and has been answered).
 */
export function laneSubscription(conn: Connection, subId: string, filters: unknown[]): boolean {
  if (filters.length !== 1) return false
  const f = filters[0] as Record<string, unknown> | null
  if (typeof f !== 'object' || f === null) return false
  const keys = Object.keys(f).filter((k) => k !== 'limit')
  const kinds = f.kinds
  const d = f['#d']
  if (keys.length !== 2 || !Array.isArray(kinds) || kinds.length !== 1 || kinds[0] !== Kind.Pairing)
    return false
  if (!Array.isArray(d) || d.length !== 1 || typeof d[0] !== 'string') return false
  const refused = firstRefusal(rejectLaneSubscription, {
    pid: pairingIdOf([['d', d[0]]]),
    join: (pid) => joinLane(conn, pid),
    subscribe: (pid) => conn.ctx.lane.subscribe(conn, pid, subId),
  })
  if (refused !== undefined) conn.send(['CLOSED', subId, refused])
  else conn.send(['EOSE', subId])
  return true
}

/** Joins pairing room `pid` and gives this connection until the room's end to finish. */
function joinLane(conn: Connection, pid: string): Refusal | undefined {
  const { lane, admission } = conn.ctx
  const refused = lane.join(
    conn,
    pid,
    (party, subId, reason) => party.send(['CLOSED', subId, `restricted: ${reason}`]),
    addressGroup(conn.socket.remoteAddress ?? ''),
  )
  if (refused !== undefined) return refused
  const until = lane.expiresAt(conn)
  if (until !== undefined) admission.extend(conn.socket, until)
  return undefined
}
