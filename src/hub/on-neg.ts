import type { Connection } from './connection.js'
import {
  firstRefusal,
  rejectNegMessage,
  rejectNegOpen,
  rejectSubscriptionId,
  type NegOpenArrival,
} from './refusals.js'

/**
 * NIP-77 verbs: checked here (refusals.ts), then handed to the connection's NegReconciliations
 * (negentropy.ts), which holds the reconciliations and their own caps.
 */

/** NEG-OPEN: members only, over what they may read (the REQ's rules). */
export function onNegOpen(conn: Connection, msg: unknown[]): void {
  const { limits } = conn.ctx
  const [, subId, rawFilter, message] = msg
  const badId = firstRefusal(rejectSubscriptionId, { verb: 'NEG-OPEN', subId, limits })
  if (badId !== undefined) {
    conn.notice(badId)
    return
  }
  const open: NegOpenArrival = { member: conn.isMemberConnection, rawFilter, message, limits }
  const refused = firstRefusal(rejectNegOpen, open)
  if (refused !== undefined) {
    conn.send(['NEG-ERR', subId, refused])
    return
  }
  conn.neg.open(subId as string, open.filter!, message as string)
}

/** NEG-MSG: the client's next message in a reconciliation. */
export function onNegMessage(conn: Connection, msg: unknown[]): void {
  const [, subId, message] = msg
  if (typeof subId !== 'string' || typeof message !== 'string') {
    conn.notice('invalid: NEG-MSG takes a subscription id and a hex message')
    return
  }
  const refused = firstRefusal(rejectNegMessage, { member: conn.isMemberConnection })
  if (refused !== undefined) conn.send(['NEG-ERR', subId, refused])
  else conn.neg.message(subId, message)
}

/** NEG-CLOSE: ends a reconciliation; no answer. */
export function onNegClose(conn: Connection, msg: unknown[]): void {
  if (typeof msg[1] === 'string') conn.neg.close(msg[1])
}
