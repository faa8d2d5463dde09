import type { Connection } from './connection.js'
import { laneSubscription } from './on-pairing.js'
import { firstRefusal, rejectReq, rejectSubscriptionId, type ReqArrival } from './refusals.js'

/** REQ: a pairing-lane subscription, or a member's: its live part starts, its stored part streams. */
export function onReq(conn: Connection, msg: unknown[]): void {
  const { limits, subs } = conn.ctx
  const badId = firstRefusal(rejectSubscriptionId, { verb: 'REQ', subId: msg[1], limits })
  if (badId !== undefined) {
    conn.notice(badId)
    return
  }
  const subId = msg[1] as string
  if (laneSubscription(conn, subId, msg.slice(2))) return
  // A REQ under an open id replaces it (NIP-01): whatever the old one still had to send is
  // dropped, so re-sending a REQ never piles up work.
  conn.streams.cancel(subId)
  const req: ReqArrival = {
    member: conn.isMemberConnection,
    rawFilters: msg.slice(2),
    filters: [],
    replaces: subs.has(conn, subId),
    subscriptions: subs.count(conn),
    limits,
  }
  const refused = firstRefusal(rejectReq, req)
  if (refused !== undefined) {
    subs.delete(conn, subId)
    conn.send(['CLOSED', subId, refused])
    return
  }
  // The live subscription starts now, before the first stored row is read: events accepted
  // while the stored part streams are held for it, so none is missed.
  subs.set(conn, subId, req.filters)
  conn.streams.start(subId, req.filters)
}

/** CLOSE: ends a subscription, its stored part and its lane subscription; no answer. */
export function onClose(conn: Connection, subId: unknown): void {
  if (typeof subId !== 'string') {
    conn.notice('invalid: CLOSE needs a subscription id')
    return
  }
  conn.streams.cancel(subId)
  conn.ctx.subs.delete(conn, subId)
  conn.ctx.lane.unsubscribe(conn, subId)
}
